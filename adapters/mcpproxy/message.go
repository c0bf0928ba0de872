// Package mcpproxy is the client side of MCP's Streamable HTTP transport
// (spec 2025-06-18) that the gateway uses towards an upstream server: it
// reads a JSON-RPC message as a client sent it, posts messages upstream
// and reads the answer, a JSON body or an SSE stream, within bounds of
// size, count and time. It decides nothing: the gateway does.
//
// It is written against the spec rather than taken from the MCP Go SDK:
// the gateway must see, check and rewrite every message as bytes (decide
// each tools/call, filter tools/list, strip capabilities, refuse batches
// and unknown ids) and relay what it does not understand unchanged; the
// SDK's client and server types parse into typed structs, manage their own
// sessions and would hide exactly what the gateway must inspect.
package mcpproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// JSON-RPC 2.0 error codes, and the gateway's own (-32000 to -32099 are
// left to implementations).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeDenied: the gateway's decision denied the call; it never
	// reached the server.
	CodeDenied = -32001
	// CodeNotApproved: the call needed approval and was rejected, or no
	// one approved it in time.
	CodeNotApproved = -32002
	// CodeUpstream: the server failed, hung, flooded or answered what
	// was never asked.
	CodeUpstream = -32003
)

// Message is one JSON-RPC 2.0 message: a request (method and id), a
// notification (method, no id) or a response (id and result or error).
// Params, Result and Error are kept as bytes, relayed unchanged unless the
// gateway rewrites them.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// IsRequest, IsNotification and IsResponse tell the kinds apart.
func (m Message) IsRequest() bool      { return m.Method != "" && m.ID != nil }
func (m Message) IsNotification() bool { return m.Method != "" && m.ID == nil }
func (m Message) IsResponse() bool     { return m.Method == "" && m.ID != nil }

// Errors of Parse, each with its JSON-RPC code (Code).
var (
	ErrBatch   = errors.New("a JSON array (batch): MCP 2025-06-18 sends one message per request")
	ErrParse   = errors.New("not JSON")
	ErrInvalid = errors.New("not a JSON-RPC 2.0 message")
)

// Code is the JSON-RPC error code of a Parse error.
func Code(err error) int {
	if errors.Is(err, ErrParse) {
		return CodeParseError
	}
	return CodeInvalidRequest
}

// Parse reads one message: no batch, "jsonrpc": "2.0", an id that is a
// string or a number (never null), and one kind only. The message does not
// share body's bytes.
func Parse(body []byte) (Message, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return Message{}, ErrBatch
	}
	var m Message
	if !readPlain(body, m.fields()) {
		m = Message{}
		if err := json.Unmarshal(body, &m); err != nil {
			return Message{}, fmt.Errorf("%w: %v", ErrParse, err)
		}
	}
	switch {
	case m.JSONRPC != "2.0":
		return Message{}, fmt.Errorf("%w: jsonrpc must be \"2.0\"", ErrInvalid)
	case m.ID != nil && !validID(m.ID):
		return Message{}, fmt.Errorf("%w: id must be a string or a number", ErrInvalid)
	case m.Method != "" && (m.Result != nil || m.Error != nil):
		return Message{}, fmt.Errorf("%w: a message has a method or a result, not both", ErrInvalid)
	case m.Method == "" && (m.ID == nil || (m.Result == nil) == (m.Error == nil)):
		return Message{}, fmt.Errorf("%w: want a method, or an id with a result or an error", ErrInvalid)
	}
	return m, nil
}

// ToolCall is what the gateway reads of a tools/call's params.
type ToolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ParseToolCall reads a tools/call's params as json.Unmarshal reads them
// into a ToolCall; the call does not share params' bytes.
func ParseToolCall(params json.RawMessage) (ToolCall, error) {
	var p ToolCall
	if readPlain(params, p.fields()) {
		return p, nil
	}
	p = ToolCall{}
	err := json.Unmarshal(params, &p)
	return p, err
}

func (p *ToolCall) fields() []plainField {
	return []plainField{{"name", &p.Name, nil}, {"arguments", nil, &p.Arguments}}
}

// fields are m's fields as readPlain reads them.
func (m *Message) fields() []plainField {
	return []plainField{{"jsonrpc", &m.JSONRPC, nil}, {"id", nil, &m.ID}, {"method", &m.Method, nil},
		{"params", nil, &m.Params}, {"result", nil, &m.Result}, {"error", nil, &m.Error}}
}

// plainField is a field of a JSON object as readPlain reads it: its name
// as json.Unmarshal matches it, and where its value goes, a string (text)
// or a JSON value as written (raw).
type plainField struct {
	name string
	text *string
	raw  *json.RawMessage
}

// readPlain reads the JSON object body into fields as json.Unmarshal
// would, without its reflection, when body is plain: valid JSON, an
// object whose keys are the fields' names as written or other ASCII names
// that none matches, whose text fields are strings of printable ASCII
// without escapes and whose raw fields are not null. It returns false
// (leaving fields partly set) for any other input, json.Unmarshal's to
// read. A gateway call goes through here three times (the client's
// message, its tools/call params, the server's answer); FuzzParse holds
// the two readings equal. The values share one copy of body.
func readPlain(body []byte, fields []plainField) bool {
	if !json.Valid(body) {
		return false
	}
	b := bytes.Clone(body)
	i := skipSpace(b, 0)
	if b[i] != '{' {
		return false
	}
	for i = skipSpace(b, i+1); b[i] != '}'; {
		keyEnd := i + 1 + bytes.IndexByte(b[i+1:], '"')
		key := b[i+1 : keyEnd]
		start := skipSpace(b, skipSpace(b, keyEnd+1)+1) // past the colon
		end := skipValue(b, start)
		value := b[start:end:end]
		if !setField(fields, key, value) {
			return false
		}
		if i = skipSpace(b, end); b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return true
}

// setField sets the field named key (as written) to value; false if
// json.Unmarshal's reading is needed.
func setField(fields []plainField, key, value []byte) bool {
	for _, f := range fields {
		switch {
		case string(key) != f.name:
		case f.text != nil:
			s, ok := plainString(value)
			*f.text = s
			return ok
		case value[0] == 'n': // null
			return false
		default:
			*f.raw = value
			return true
		}
	}
	return otherKey(key, fields)
}

// otherKey: key (as written) is plain ASCII without escapes and matches
// none of the fields' names, even as json.Unmarshal folds case.
func otherKey(key []byte, fields []plainField) bool {
	for _, c := range key {
		if c < 0x20 || c > 0x7e || c == '\\' {
			return false
		}
	}
	for _, f := range fields {
		if bytes.EqualFold(key, []byte(f.name)) {
			return false
		}
	}
	return true
}

// plainString is the JSON string v's value if it is printable ASCII
// without escapes.
func plainString(v []byte) (string, bool) {
	if v[0] != '"' {
		return "", false
	}
	for _, c := range v[1 : len(v)-1] {
		if c < 0x20 || c > 0x7e || c == '\\' {
			return "", false
		}
	}
	if string(v) == `"2.0"` {
		return "2.0", true
	}
	return string(v[1 : len(v)-1]), true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipValue returns the end of the valid JSON value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for ; i < len(b); i++ { // a number, true, false or null
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
	}
	return i
}

// skipString returns the end of the valid JSON string starting at b[i].
func skipString(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// validID: id, a JSON value (as Parse reads it), is a string or a number.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	c := id[0]
	return c == '"' || c == '-' || ('0' <= c && c <= '9')
}

// SameID reports whether two ids are one: equal as JSON values.
func SameID(a, b json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
}

// ErrorObject is a JSON-RPC error; Data carries the gateway's reason.
type ErrorObject struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// ErrorResponse is the response to request id (null when unknown) with e.
func ErrorResponse(id json.RawMessage, e ErrorObject) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   ErrorObject     `json:"error"`
	}{"2.0", id, e})
	return b
}

// Encode writes m back as JSON.
func Encode(m Message) []byte {
	b, _ := json.Marshal(m)
	return b
}
