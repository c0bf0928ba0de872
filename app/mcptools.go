package app

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
	"github.com/agentauth/agentauth/ports"
)

// A tool may name arguments that a 2026-07-28 request mirrors into
// Mcp-Param-{Name} headers (x-mcp-header in its inputSchema,
// streamable-http.mdx "Custom Headers from Tool Parameters"). The gateway
// checks a 2026 client's headers against the arguments, and writes them
// for a 2025 client's call to a 2026 server; for that it keeps, per
// server, the bindings its tools/list declared, learned from every
// tools/list answer it relays, or asked for when it has none.

// toolsTTL is how long a server's tool bindings hold without a tools/list.
const toolsTTL = 10 * time.Minute

// paramBinding is one argument a tool mirrors into a header: the chain of
// properties leading to it, and the header's name after Mcp-Param-.
type paramBinding struct {
	path   []string
	header string
}

type serverTools struct {
	endpoint string
	bindings map[string][]paramBinding
	until    time.Time
}

// serverTools are the bindings the gateway keeps of sv: nil when it keeps
// none (or of another endpoint).
func (u *upstreams) serverTools(sv domain.Server) *serverTools {
	if st, ok := u.tools[sv.Name]; ok && st.endpoint == sv.Endpoint {
		return st
	}
	return nil
}

// listedSchema is what the gateway reads of a listed tool.
type listedSchema struct {
	Name        string         `json:"name"`
	InputSchema schemaProperty `json:"inputSchema"`
}

type schemaProperty struct {
	Type       json.RawMessage           `json:"type"`
	Header     json.RawMessage           `json:"x-mcp-header"`
	Properties map[string]schemaProperty `json:"properties"`
}

// bindingsOf reads a tool's x-mcp-header annotations; a tool whose
// annotations break the rules (a non-primitive or number type, a name
// that is no HTTP token, a name twice) has none the gateway uses.
func bindingsOf(t listedSchema) []paramBinding {
	var out []paramBinding
	seen := map[string]bool{}
	var walk func(props map[string]schemaProperty, prefix []string) bool
	walk = func(props map[string]schemaProperty, prefix []string) bool {
		for name, p := range props {
			path := append(append([]string(nil), prefix...), name)
			if p.Header != nil {
				var h, typ string
				if json.Unmarshal(p.Header, &h) != nil || !httpToken(h) || seen[strings.ToLower(h)] {
					return false
				}
				if json.Unmarshal(p.Type, &typ) != nil || (typ != "string" && typ != "integer" && typ != "boolean") {
					return false
				}
				seen[strings.ToLower(h)] = true
				out = append(out, paramBinding{path: path, header: h})
			}
			if !walk(p.Properties, path) {
				return false
			}
		}
		return true
	}
	if !walk(t.InputSchema.Properties, nil) {
		return nil
	}
	return out
}

// httpToken: s is an HTTP field-name token (RFC 9110 tchar).
func httpToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// learnTools keeps the bindings of the tools a tools/list result of sv
// lists (every page adds to what the server's memory holds).
func (s *MCPGateway) learnTools(sv domain.Server, result json.RawMessage) {
	var res struct {
		Tools []listedSchema `json:"tools"`
	}
	if json.Unmarshal(result, &res) != nil {
		return
	}
	u := s.upstreams
	u.mu.Lock()
	defer u.mu.Unlock()
	st := u.serverTools(sv)
	if st == nil || !u.now().Before(st.until) {
		st = &serverTools{endpoint: sv.Endpoint, bindings: map[string][]paramBinding{}}
		u.tools[sv.Name] = st
	}
	st.until = u.now().Add(toolsTTL)
	for _, t := range res.Tools {
		st.bindings[t.Name] = bindingsOf(t)
	}
}

// toolBindings are the header bindings of tool at x's server: from memory,
// else from the server's tools/list, asked now.
func (s *MCPGateway) toolBindings(ctx context.Context, x *exchange, tool string) ([]paramBinding, error) {
	u := s.upstreams
	u.mu.Lock()
	st := u.serverTools(x.sv)
	fresh := st != nil && u.now().Before(st.until)
	var b []paramBinding
	if fresh {
		b = st.bindings[tool]
	}
	u.mu.Unlock()
	if fresh {
		return b, nil
	}
	cred, err := s.credential(ctx, x)
	if err != nil {
		return nil, err
	}
	era, err := s.era(ctx, x.sv, cred)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.set.CallTimeout)
	defer cancel()
	if _, err := s.listTools(ctx, x.sv, era, cred); err != nil {
		return nil, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if st := u.serverTools(x.sv); st != nil {
		return st.bindings[tool], nil
	}
	return nil, nil
}

// knownBindings are the header bindings of tool at sv the gateway knows
// now (none when it knows none).
func (s *MCPGateway) knownBindings(sv domain.Server, tool string) []paramBinding {
	u := s.upstreams
	u.mu.Lock()
	defer u.mu.Unlock()
	if st := u.serverTools(sv); st != nil {
		return st.bindings[tool]
	}
	return nil
}

// argumentAt is the value at path in a call's arguments; nil when absent.
func argumentAt(args json.RawMessage, path []string) json.RawMessage {
	cur := args
	for _, step := range path {
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return nil
		}
		v, ok := obj[step]
		if !ok {
			return nil
		}
		cur = v
	}
	return cur
}

// headerText is a primitive argument as its header carries it (before
// encoding): a string as it is, an integer in decimal (within
// JavaScript's safe range), a boolean as true or false; false for
// anything else.
func headerText(v json.RawMessage) (string, bool) {
	var any interface{}
	if json.Unmarshal(v, &any) != nil {
		return "", false
	}
	switch t := any.(type) {
	case string:
		return t, true
	case bool:
		return strconv.FormatBool(t), true
	case float64:
		if t != math.Trunc(t) || math.Abs(t) > 1<<53-1 {
			return "", false
		}
		return strconv.FormatInt(int64(t), 10), true
	}
	return "", false
}

// paramHeaders are the Mcp-Param-* headers a call with args carries.
func paramHeaders(bindings []paramBinding, args json.RawMessage) []ports.MCPParam {
	var out []ports.MCPParam
	for _, b := range bindings {
		v := argumentAt(args, b.path)
		if v == nil || string(v) == "null" {
			continue
		}
		if text, ok := headerText(v); ok {
			out = append(out, ports.MCPParam{Name: b.header, Value: mcpwire.EncodeHeaderValue(text)})
		}
	}
	return out
}

// headerMismatch is an Mcp-Param-* header that does not say what the
// arguments say.
type headerMismatch struct{ header, sent, body, why string }

// checkParamHeaders checks a 2026 client's Mcp-Param-* headers against a
// call's arguments (streamable-http.mdx, "Server Behavior for Custom
// Headers"): each bound argument present has its header, equal once
// decoded (integers compared as numbers); an absent or null one has none.
// Headers no binding names are relayed and otherwise ignored.
func checkParamHeaders(bindings []paramBinding, args json.RawMessage, sent []ports.MCPParam) *headerMismatch {
	for _, b := range bindings {
		var header *ports.MCPParam
		for i := range sent {
			if strings.EqualFold(sent[i].Name, b.header) {
				header = &sent[i]
			}
		}
		name, arg := mcpwire.HeaderParamPrefix+b.header, strings.Join(b.path, ".")
		v := argumentAt(args, b.path)
		if v == nil || string(v) == "null" {
			if header != nil {
				return &headerMismatch{name, header.Value, "", name + " sent for the argument " + arg + ", which is absent"}
			}
			continue
		}
		if header == nil {
			return &headerMismatch{name, "", string(v), name + " missing for the argument " + arg}
		}
		got, ok := mcpwire.DecodeHeaderValue(header.Value)
		if !ok {
			return &headerMismatch{name, header.Value, string(v), name + " has characters a header may not carry, or a sentinel that does not decode"}
		}
		want, ok := headerText(v)
		if !ok {
			return &headerMismatch{name, header.Value, string(v), name + " sent for the argument " + arg + ", which is not a string, integer or boolean"}
		}
		if got != want && !sameInteger(got, v) {
			return &headerMismatch{name, header.Value, want, "Header mismatch: " + name + " header value '" + header.Value + "' does not match the argument " + arg}
		}
	}
	return nil
}

// sameInteger: header text and the integer argument v are one number.
func sameInteger(text string, v json.RawMessage) bool {
	h, err := strconv.ParseFloat(text, 64)
	var a float64
	return err == nil && json.Unmarshal(v, &a) == nil && h == a && h == math.Trunc(h)
}
