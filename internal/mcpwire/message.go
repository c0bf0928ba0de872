// Package mcpwire is MCP's messages as bytes: JSON-RPC 2.0 messages read
// as a client or a server sent them, checked, and written back; the
// gateway's error answers; and the framing of Server-Sent Events. The
// edge reads requests with it, the gateway's use case (app) rewrites and
// answers with it, and the upstream adapter (adapters/mcpproxy) reads the
// servers' answers with it. It decides nothing.
//
// It is written against the spec rather than taken from the MCP Go SDK:
// the gateway must see, check and rewrite every message as bytes (decide
// each tools/call, filter tools/list, strip capabilities, refuse batches
// and unknown ids) and relay what it does not understand unchanged; the
// SDK's client and server types parse into typed structs, manage their own
// sessions and would hide exactly what the gateway must inspect.
package mcpwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gowebpki/jcs"

	// Messages are read with encoding/json's behaviour (names matched
	// without regard to case, the last of two kept; the gateway refuses
	// two first, see strictjson) at about half its cost: the v1 package
	// of github.com/go-json-experiment/json, encoding/json/v2's own
	// implementation of v1. FuzzParse holds its readings equal to
	// encoding/json's.
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// Headers of the Streamable HTTP transport.
const (
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderProtocolVersion = "Mcp-Protocol-Version"
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
	// CodeUpstream: the server failed, hung, flooded or answered what
	// was never asked.
	CodeUpstream = -32003
)

// The gateway's codes for a call that needed approval and did not get to
// run, outside the range JSON-RPC reserves (MCP 2026-07-28,
// basic/index.mdx "Error Codes": new codes SHOULD be allocated there, and
// -32002 is MCP's own "resource not found").
const (
	// CodeApprovalRejected: an approver rejected the call.
	CodeApprovalRejected = -31001
	// CodeApprovalWithdrawn: the call was withdrawn, as nobody waited for
	// it any more (its caller cancelled or declined to open the approval).
	CodeApprovalWithdrawn = -31002
	// CodeApprovalTimeout: the hold ended (gateway.askTimeout) before
	// anyone approved the call; it is withdrawn.
	CodeApprovalTimeout = -31003
	// CodeApprovalUsed: the approval was spent already, or is for other
	// arguments.
	CodeApprovalUsed = -31004
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
	if err := jsonv1.Unmarshal(body, &m); err != nil {
		return Message{}, fmt.Errorf("%w: %v", ErrParse, err)
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

// Params is what the gateway reads of a request's params: the name (a
// tool's, a prompt's) or URI it is about, a tool call's arguments, the
// per-request metadata of MCP 2026-07-28, and a multi round-trip retry's
// request state and input responses.
type Params struct {
	Name           string          `json:"name"`
	URI            string          `json:"uri"`
	Arguments      json.RawMessage `json:"arguments"`
	Meta           Meta            `json:"_meta"`
	RequestState   string          `json:"requestState"`
	InputResponses json.RawMessage `json:"inputResponses"`
}

// Meta is what the gateway reads of a request's _meta (MCP 2026-07-28).
type Meta struct {
	ProtocolVersion    string          `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
}

// ParseParams reads a request's params (none when there are none); what
// it reads does not share params' bytes.
func ParseParams(params json.RawMessage) (Params, error) {
	var p Params
	if len(params) == 0 {
		return p, nil
	}
	err := jsonv1.Unmarshal(params, &p)
	return p, err
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
	Code    int        `json:"code"`
	Message string     `json:"message"`
	Data    *ErrorData `json:"data,omitempty"`
}

// ErrorData is what the gateway's errors carry: its reason code and the
// request's id, and what the error names (MCP 2026-07-28's
// UnsupportedProtocolVersionError: the versions supported and requested;
// a header mismatch: the header and both values; the tool call).
type ErrorData struct {
	Reason      string   `json:"reason_code"`
	RequestID   string   `json:"request_id,omitempty"`
	Supported   []string `json:"supported,omitempty"`
	Requested   *string  `json:"requested,omitempty"`
	Header      string   `json:"header,omitempty"`
	HeaderValue *string  `json:"header_value,omitempty"`
	BodyValue   *string  `json:"body_value,omitempty"`
	Call        string   `json:"call,omitempty"`
	// ConnectURL is where the caller's person connects the server's
	// upstream (upstream_not_connected).
	ConnectURL string `json:"connect_url,omitempty"`
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

// CanonicalArguments is a tool call's arguments in the canonical JSON of
// RFC 8785 (JCS), what an approval is bound to and what is stored: absent
// or null arguments are {}; anything but an object is refused.
func CanonicalArguments(args json.RawMessage) ([]byte, error) {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	canonical, err := jcs.Transform(args)
	if err != nil || len(canonical) == 0 || canonical[0] != '{' {
		return nil, errors.New("arguments must be a JSON object")
	}
	return canonical, nil
}

// WithoutClientCapabilities drops sampling, elicitation and roots from an
// initialize request's capabilities: the gateway relays no server request,
// so the server must not count on them.
func WithoutClientCapabilities(msg Message) ([]byte, error) {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(msg.Params, &params); err != nil {
		return nil, fmt.Errorf("initialize params must be an object")
	}
	if raw, ok := params["capabilities"]; ok {
		var caps map[string]json.RawMessage
		if err := json.Unmarshal(raw, &caps); err != nil {
			return nil, fmt.Errorf("initialize params.capabilities must be an object")
		}
		delete(caps, "sampling")
		delete(caps, "elicitation")
		delete(caps, "roots")
		params["capabilities"], _ = json.Marshal(caps)
	}
	msg.Params, _ = json.Marshal(params)
	return Encode(msg), nil
}

// ToolList is a tools/list result as read: its members, its tools, and
// each tool's name ("" for a tool without one, never callable).
type ToolList struct {
	members map[string]json.RawMessage
	tools   []json.RawMessage
	Names   []string
}

// ReadToolList reads a tools/list result.
func ReadToolList(result json.RawMessage) (ToolList, error) {
	var l ToolList
	if err := json.Unmarshal(result, &l.members); err != nil {
		return l, fmt.Errorf("tools/list result: %w", err)
	}
	if err := json.Unmarshal(l.members["tools"], &l.tools); err != nil {
		return l, fmt.Errorf("tools/list result: %w", err)
	}
	l.Names = make([]string, len(l.tools))
	for i, t := range l.tools {
		var named struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(t, &named) // an unnamed tool is never callable
		l.Names[i] = named.Name
	}
	return l, nil
}

// Keep is the result with only the tools whose keep is true (in Names'
// order); every other member is kept as it was.
func (l ToolList) Keep(keep []bool) json.RawMessage {
	kept := make([]json.RawMessage, 0, len(l.tools))
	for i, t := range l.tools {
		if keep[i] {
			kept = append(kept, t)
		}
	}
	l.members["tools"], _ = json.Marshal(kept)
	b, _ := json.Marshal(l.members)
	return b
}

// definitionMembers are the members of a listed tool that make its
// definition: what a client's model reads, and what the server checks
// calls against. Others (_meta, icons) may change between lists without
// the tool changing.
var definitionMembers = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}

// Tools are the listed tools, each as the server sent it (in Names'
// order).
func (l ToolList) Tools() []json.RawMessage { return l.tools }

// ToolDefinition is the definition of a listed tool (a member of a
// tools/list result's tools): its definition members as RFC 8785
// canonical JSON ("" for a tool that is no object).
func ToolDefinition(tool json.RawMessage) string {
	var members map[string]json.RawMessage
	if json.Unmarshal(tool, &members) != nil || members == nil {
		return ""
	}
	def := make(map[string]json.RawMessage, len(definitionMembers))
	for _, m := range definitionMembers {
		if v, ok := members[m]; ok {
			def[m] = v
		}
	}
	b, err := json.Marshal(def)
	if err != nil {
		return ""
	}
	canonical, err := jcs.Transform(b)
	if err != nil {
		return ""
	}
	return string(canonical)
}
