package mcpwire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// MCP 2026-07-28 (docs/specification/2026-07-28 of
// github.com/modelcontextprotocol/modelcontextprotocol): every request
// carries its protocol version, client info and capabilities in
// params._meta (basic/index.mdx, "_meta"); the Streamable HTTP transport
// mirrors the method and the name called into headers, which must equal
// the body (basic/transports/streamable-http.mdx, "Request Metadata").
const (
	// Modern is the revision the gateway speaks statelessly.
	Modern = "2026-07-28"

	HeaderMethod      = "Mcp-Method"
	HeaderName        = "Mcp-Name"
	HeaderParamPrefix = "Mcp-Param-"

	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// Error codes MCP 2026-07-28 defines (basic/index.mdx, "Error Codes").
const (
	CodeHeaderMismatch     = -32020
	CodeMissingCapability  = -32021
	CodeUnsupportedVersion = -32022
)

// IsModern reports whether a request of protocol version header and
// _meta version meta speaks the stateless revision (2026-07-28 and
// later): a version in its _meta, or a header naming such a revision.
func IsModern(header, meta string) bool {
	return meta != "" || header >= Modern
}

// NamedMethods are the methods whose Mcp-Name header mirrors params.name
// or params.uri.
func NamedMethods(method string) bool {
	return method == "tools/call" || method == "prompts/get" || method == "resources/read"
}

// base64 sentinel of a header value (streamable-http.mdx, "Value Encoding").
const (
	sentinelStart = "=?base64?"
	sentinelEnd   = "?="
)

// DecodeHeaderValue reads an Mcp-Name or Mcp-Param-* value: the value as
// sent, or the UTF-8 text a =?base64?…?= sentinel encodes. False for a
// value with characters a header may not carry plainly (anything but
// visible ASCII, space and tab) or a sentinel that does not decode.
func DecodeHeaderValue(v string) (string, bool) {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c > 0x7e {
			return "", false
		}
	}
	if enc, ok := strings.CutPrefix(v, sentinelStart); ok {
		if enc, ok = strings.CutSuffix(enc, sentinelEnd); ok {
			b, err := base64.StdEncoding.DecodeString(enc)
			if err != nil {
				return "", false
			}
			return string(b), true
		}
	}
	return v, true
}

// EncodeHeaderValue is v as an Mcp-Name or Mcp-Param-* value: as it is
// when a header carries it plainly, else in a base64 sentinel (leading or
// trailing white space, characters outside visible ASCII, or a text that
// reads as a sentinel itself).
func EncodeHeaderValue(v string) string {
	plain := v == "" || (v[0] != ' ' && v[0] != '\t' && v[len(v)-1] != ' ' && v[len(v)-1] != '\t')
	for i := 0; plain && i < len(v); i++ {
		plain = v[i] >= 0x20 && v[i] <= 0x7e
	}
	if plain && !(strings.HasPrefix(v, sentinelStart) && strings.HasSuffix(v, sentinelEnd)) {
		return v
	}
	return sentinelStart + base64.StdEncoding.EncodeToString([]byte(v)) + sentinelEnd
}

// member is where one object member lies in a text: the member from its
// name (after the white space and comma before it), its value, and the
// object holding it.
type member struct {
	start, valueStart, valueEnd int
	first                       bool
}

// errNotObject: a step of a path is not an object.
var errNotObject = errors.New("not an object")

// locate finds the member at path (names matched as the gateway reads
// them: without regard to case) in body, a JSON object. found is false
// when a step is missing; then depth is the steps found and obj the span
// of the object that would hold the missing one.
func locate(body []byte, path []string) (m member, obj [2]int, depth int, found bool, err error) {
	r := locators.Get().(*locator)
	defer r.release()
	// A bytes.Buffer is read in place, not copied (jsontext.NewDecoder).
	r.src = *bytes.NewBuffer(body)
	r.dec.Reset(&r.src, jsontext.AllowDuplicateNames(true))
	dec := &r.dec
	for depth = 0; depth < len(path); depth++ {
		if dec.PeekKind() != '{' {
			return m, obj, depth, false, errNotObject
		}
		at := int(dec.InputOffset())
		obj[0] = at + bytes.IndexByte(body[at:], '{')
		if _, err := dec.ReadToken(); err != nil {
			return m, obj, depth, false, err
		}
		hit := false
		for first := true; !hit && dec.PeekKind() != '}'; first = false {
			before := int(dec.InputOffset())
			raw, err := dec.ReadValue()
			if err != nil {
				return m, obj, depth, false, err
			}
			if r.name, err = jsontext.AppendUnquote(r.name[:0], raw); err != nil {
				return m, obj, depth, false, err
			}
			if !strings.EqualFold(string(r.name), path[depth]) {
				if err := dec.SkipValue(); err != nil {
					return m, obj, depth, false, err
				}
				continue
			}
			after := int(dec.InputOffset())
			vs := after + bytes.IndexByte(body[after:], ':') + 1
			for vs < len(body) && (body[vs] == ' ' || body[vs] == '\t' || body[vs] == '\r' || body[vs] == '\n') {
				vs++
			}
			m, hit = member{start: before, valueStart: vs, first: first}, true
			if first {
				m.start = obj[0] + 1
			}
		}
		if !hit {
			if _, err := dec.ReadToken(); err != nil { // the object's end
				return m, obj, depth, false, err
			}
			obj[1] = int(dec.InputOffset())
			return m, obj, depth, false, nil
		}
	}
	if err := dec.SkipValue(); err != nil {
		return m, obj, depth, false, err
	}
	m.valueEnd = int(dec.InputOffset())
	return m, obj, depth, true, nil
}

// locators keeps decoders between walks: a walk then allocates little.
var locators = sync.Pool{New: func() any { return new(locator) }}

type locator struct {
	src  bytes.Buffer
	dec  jsontext.Decoder
	name []byte
}

// release drops every reference to the body walked and goes back to the
// pool.
func (r *locator) release() {
	r.src = bytes.Buffer{}
	r.dec.Reset(&r.src)
	locators.Put(r)
}

// SetMember is body (a JSON object) with the value at path replaced by
// value, or added where it is missing, along with the objects on its way.
// value is a JSON value, written as it is.
func SetMember(body []byte, value []byte, path ...string) ([]byte, error) {
	m, obj, depth, found, err := locate(body, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(path[:min(depth+1, len(path))], "."), err)
	}
	if found {
		return splice(body, m.valueStart, m.valueEnd, value), nil
	}
	// Wrap value in the objects missing on its way, and add it as the
	// first member of the deepest object found.
	add := value
	for i := len(path) - 1; i > depth; i-- {
		add = append(append(append([]byte(`{`), quote(path[i])...), ':'), append(add, '}')...)
	}
	ins := append(append(quote(path[depth]), ':'), add...)
	if len(bytes.TrimSpace(body[obj[0]+1:obj[1]-1])) > 0 {
		ins = append(ins, ',')
	}
	return splice(body, obj[0]+1, obj[0]+1, ins), nil
}

// DeleteMember is body (a JSON object) without the member at path; body
// itself when there is none.
func DeleteMember(body []byte, path ...string) ([]byte, error) {
	m, _, depth, found, err := locate(body, path)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", strings.Join(path[:min(depth+1, len(path))], "."), err)
	case !found:
		return body, nil
	}
	end := m.valueEnd
	if m.first {
		// The member was the first: take the comma after it, if any.
		rest := bytes.TrimLeft(body[end:], " \t\r\n")
		if len(rest) > 0 && rest[0] == ',' {
			end = len(body) - len(rest) + 1
		}
	}
	return splice(body, m.start, end, nil), nil
}

// MemberValue is the value at path in body, nil when there is none.
func MemberValue(body []byte, path ...string) []byte {
	m, _, _, found, err := locate(body, path)
	if err != nil || !found {
		return nil
	}
	return body[m.valueStart:m.valueEnd]
}

func splice(body []byte, from, to int, with []byte) []byte {
	out := make([]byte, 0, len(body)-(to-from)+len(with))
	return append(append(append(out, body[:from]...), with...), body[to:]...)
}

func quote(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// KeepCapabilities is a client's capabilities (a JSON object) with only
// the members named in keep: what the gateway lets a server count on.
func KeepCapabilities(caps json.RawMessage, keep ...string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(caps, &m); err != nil || m == nil {
		return nil, errors.New("client capabilities must be an object")
	}
	out := make(map[string]json.RawMessage, len(keep))
	for k, v := range m {
		for _, want := range keep {
			if strings.EqualFold(k, want) {
				out[k] = v
			}
		}
	}
	b, _ := json.Marshal(out)
	return b, nil
}
