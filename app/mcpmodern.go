package app

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
	"github.com/agentauth/agentauth/ports"
)

// MCP 2026-07-28 is stateless: no initialize, no Mcp-Session-Id; every
// request carries its version, client info and capabilities in
// params._meta, and on HTTP its method and name again in headers, which
// must equal the body (docs/specification/2026-07-28: basic/index.mdx,
// basic/versioning.mdx, basic/transports/streamable-http.mdx). The gateway
// decides each request on its own, from the body, so any instance answers
// any request.

// cacheTTL is the ttlMs of what the gateway answers about a server
// (server/discover, tools/list): short, as policy may change what an agent
// sees at any time; cacheScope is always private, the view being the
// caller's (server/utilities/caching.mdx).
const cacheTTL = 30_000

// modernPost decides a request of a 2026-07-28 client: the rules of the
// revision first (none of it is forwarded when one is broken), then the
// method's.
func (s *MCPGateway) modernPost(ctx context.Context, x *exchange, msg mcpwire.Message) (MCPAnswer, error) {
	in, p := x.in, &x.p
	if p.Meta.ProtocolVersion != "" && in.ProtocolVersion != p.Meta.ProtocolVersion {
		return x.mismatch(msg.ID, mcpwire.HeaderProtocolVersion, in.ProtocolVersion, p.Meta.ProtocolVersion), nil
	}
	if in.ProtocolVersion != mcpwire.Modern {
		return x.unsupported(msg.ID, in.ProtocolVersion), nil
	}
	if msg.IsRequest() && (p.Meta.ProtocolVersion == "" || len(p.Meta.ClientCapabilities) == 0 || p.Meta.ClientCapabilities[0] != '{') {
		// basic/index.mdx: a request missing a required _meta field is
		// malformed, -32602 with 400.
		x.refuse("")
		x.n.Reason = domain.ReasonGatewayMalformed
		return x.rpcError(400, msg.ID, mcpwire.CodeInvalidParams, x.n.Reason, "params._meta must carry "+mcpwire.MetaProtocolVersion+
			" and "+mcpwire.MetaClientCapabilities+" (an object)"), nil
	}
	if in.Method != msg.Method && (msg.IsRequest() || in.Method != "") {
		return x.mismatch(msg.ID, mcpwire.HeaderMethod, in.Method, msg.Method), nil
	}
	if mcpwire.NamedMethods(msg.Method) {
		name := p.Name
		if msg.Method == "resources/read" {
			name = p.URI
		}
		if got, ok := mcpwire.DecodeHeaderValue(in.Name); in.Name == "" || !ok || got != name {
			return x.mismatch(msg.ID, mcpwire.HeaderName, in.Name, name), nil
		}
	}
	if msg.IsNotification() {
		// The revision defines no client notification over HTTP (a closed
		// stream cancels): taken, relayed nowhere.
		x.n.Decision = "allow"
		x.answer.Status = 202
		return x.done(), nil
	}
	switch msg.Method {
	case "server/discover":
		return s.discover(ctx, x, msg)
	case "tools/list":
		x.n.Decision = "allow"
		rep, ok, err := s.forward(ctx, x, msg, x.in.Body)
		if !ok || err != nil {
			return x.done(), err
		}
		if len(rep.Messages) > 0 {
			last := &rep.Messages[len(rep.Messages)-1]
			if last.Result, err = s.callableTools(ctx, x, last.Result); err != nil {
				return x.done(), err
			}
			last.Result = privateList(last.Result)
		}
		complete(rep)
		reply(x, rep)
		return x.done(), nil
	case "tools/call":
		bindings, err := s.toolBindings(ctx, x, x.p.Name)
		if err != nil && len(in.Params) > 0 {
			return s.upstreamFailed(x, msg.ID, err), nil // nothing to check them against
		}
		if h := checkParamHeaders(bindings, x.p.Arguments, in.Params); h != nil {
			return x.mismatchWhy(msg.ID, h.header, h.sent, h.body, h.why), nil
		}
		return s.toolsCall(ctx, x, msg)
	}
	// subscriptions/listen among them: the gateway relays no server stream
	// (and offers no listChanged), so nothing another agent sees leaks.
	x.refuse("")
	x.n.Decision, x.n.Reason = "deny", domain.ReasonGatewayMethod
	return x.rpcError(404, msg.ID, mcpwire.CodeMethodNotFound, x.n.Reason,
		"method "+msg.Method+" is not offered through the agentauth gateway"), nil
}

// mismatch answers a header that does not say what the body says
// (-32020 HeaderMismatch, 400), audited and never forwarded.
func (x *exchange) mismatch(id json.RawMessage, header, sent, body string) MCPAnswer {
	why := "Header mismatch: " + header + " header value '" + sent + "' does not match body value '" + body + "'"
	if sent == "" {
		why = "Header mismatch: the required " + header + " header is missing"
	}
	return x.mismatchWhy(id, header, sent, body, why)
}

// mismatchWhy is mismatch saying why.
func (x *exchange) mismatchWhy(id json.RawMessage, header, sent, body, why string) MCPAnswer {
	x.refuse("")
	x.n.Reason = domain.ReasonGatewayHeaderMismatch
	return x.rpcErrorData(400, id, mcpwire.CodeHeaderMismatch, x.n.Reason, why,
		&mcpwire.ErrorData{Header: header, HeaderValue: &sent, BodyValue: &body})
}

// discover answers server/discover for the caller: the versions the
// gateway speaks with this server (all of them: it bridges the eras), its
// capabilities as the gateway offers them (tools only), the server's
// identity and instructions, cached privately for a short time.
func (s *MCPGateway) discover(ctx context.Context, x *exchange, msg mcpwire.Message) (MCPAnswer, error) {
	era, err := s.eraOf(ctx, x)
	if err != nil {
		return s.upstreamFailed(x, msg.ID, err), nil
	}
	x.n.Decision = "allow"
	res := map[string]any{"resultType": "complete", "supportedVersions": supportedVersions,
		"capabilities": map[string]any{"tools": map[string]any{}},
		"_meta":        map[string]json.RawMessage{mcpwire.MetaServerInfo: serverInfoOf(era)},
		"ttlMs":        cacheTTL, "cacheScope": "private"}
	if era.instructions != "" {
		res["instructions"] = era.instructions
	}
	b, _ := json.Marshal(res)
	return x.result(msg.ID, b), nil
}

// complete gives the result a 2026 client gets its resultType: a 2025
// server's results have none (and mean complete).
func complete(rep ports.MCPReply) {
	if len(rep.Messages) == 0 {
		return
	}
	last := &rep.Messages[len(rep.Messages)-1]
	r := last.Result
	if len(r) == 0 || r[0] != '{' {
		return
	}
	if !bytes.Contains(r, []byte(`"resultType"`)) { // none anywhere: no need to read it
		last.Result = append(append([]byte(`{"resultType":"complete"`), byte(',')), r[1:]...)
		if len(bytes.TrimSpace(r[1:])) == 1 { // {}
			last.Result = []byte(`{"resultType":"complete"}`)
		}
		return
	}
	if mcpwire.MemberValue(r, "resultType") != nil {
		return
	}
	if b, err := mcpwire.SetMember(r, []byte(`"complete"`), "resultType"); err == nil {
		last.Result = b
	}
}

// privateList is a tools/list result as the gateway answers a 2026 client:
// its ttlMs at most cacheTTL, its cacheScope private (the list is the
// caller's).
func privateList(result []byte) []byte {
	ttl := []byte(`30000`)
	if v := mcpwire.MemberValue(result, "ttlMs"); v != nil {
		var n float64
		if json.Unmarshal(v, &n) == nil && n >= 0 && n < cacheTTL {
			ttl = v
		}
	}
	for _, m := range []struct {
		name  string
		value []byte
	}{{"ttlMs", ttl}, {"cacheScope", []byte(`"private"`)}} {
		if b, err := mcpwire.SetMember(result, m.value, m.name); err == nil {
			result = b
		}
	}
	return result
}
