package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
	"github.com/agentauth/agentauth/internal/strictjson"
	"github.com/agentauth/agentauth/ports"
)

// MCPSettings configure the MCP gateway's flow (MCPGateway).
type MCPSettings struct {
	// Upstream carries messages to the servers, Credentials gives the
	// gateway's own credential for each.
	Upstream    ports.MCPUpstream
	Credentials ports.UpstreamCredentials
	// ResourceBase is the public URL the gateway's resources are named
	// under (the API's, with the base path): {ResourceBase}/mcp/{server}.
	ResourceBase string
	// SessionKey (32 bytes) seals the gateway's MCP session ids; every
	// instance of a cluster needs the same. Nil: a random key, which only
	// this process opens.
	SessionKey []byte
	// CallTimeout bounds one exchange with a server; AskTimeout how long
	// a held call waits for its approval; StreamTimeout how long a
	// server's own stream is relayed.
	CallTimeout, AskTimeout, StreamTimeout time.Duration
	// MaxMessageBytes bounds a message a client sends, and each the
	// gateway relays from a server's own stream.
	MaxMessageBytes int64
	// AuditArgumentBytes > 0 records each tools/call's canonical arguments
	// in its audit record, cut to that many bytes; 0 records their hash only.
	AuditArgumentBytes int
	// Poll is how often a held call reads its approval; KeepAlive how
	// often its stream gets a comment.
	Poll, KeepAlive time.Duration
}

// MCPGateway is the MCP gateway's flow: /mcp/{server} in front of each
// registered server's endpoint. It decides every message (with Gateway,
// the decision of POST …/tool-calls), forwards what is allowed through
// the upstream port with the server's own credential, holds what asks for
// approval, and answers the rest; the edge only reads the HTTP request
// and writes the answer. See docs/gateway.md for the rule of each method.
type MCPGateway struct {
	decide   *Gateway
	up       ports.MCPUpstream
	creds    ports.UpstreamCredentials
	audit    ports.AuditLog
	set      MCPSettings
	sessions *mcpSessions
	// upstreams is what the gateway learned of each server (its era, its
	// tools' header bindings) and the 2025 sessions it holds with them.
	upstreams *upstreams
	// people give each person's own token to servers with upstream_auth
	// (nil: such servers are refused).
	people *Connections
}

// NewMCPGateway builds the flow on the decision use case g.
func NewMCPGateway(g *Gateway, audit ports.AuditLog, set MCPSettings) (*MCPGateway, error) {
	sessions, err := newMCPSessions(set.SessionKey)
	if err != nil {
		return nil, err
	}
	return &MCPGateway{decide: g, up: set.Upstream, creds: set.Credentials, audit: audit, set: set, sessions: sessions,
		upstreams: newUpstreams()}, nil
}

// Stop ends, at once, the streams relayed and the calls held (a held call
// answers approval_timeout; its pending approval stays).
func (s *MCPGateway) Stop() { s.sessions.stop() }

// ResourceBase is the public URL the gateway's resources are named under.
func (s *MCPGateway) ResourceBase() string { return s.set.ResourceBase }

// ResourceURL names the gateway resource of server.
func (s *MCPGateway) ResourceURL(server string) string {
	return strings.TrimSuffix(s.set.ResourceBase, "/") + "/mcp/" + server
}

// legacyVersions are the MCP versions whose initialize handshake the
// gateway speaks; supportedVersions every version it speaks, newest first.
var (
	legacyVersions    = []string{"2025-03-26", "2025-06-18", "2025-11-25"}
	supportedVersions = []string{mcpwire.Modern, "2025-11-25", "2025-06-18", "2025-03-26"}
)

// methodAction is what the gateway does with one MCP method.
type methodAction int

const (
	// ruleForward: relayed as is (initialize with client capabilities
	// stripped; tools/list with the result filtered).
	ruleForward methodAction = iota
	// ruleToolsCall: decided, then forwarded, refused or held.
	ruleToolsCall
	// ruleRefuse: answered -32601 (a notification: dropped), never
	// forwarded: policy covers tools only, so resources, prompts,
	// completion and logging stay closed until it covers them.
	ruleRefuse
)

// methodRules lists every method the gateway relays; any other is refused.
var methodRules = map[string]methodAction{
	"initialize":                ruleForward,
	"ping":                      ruleForward,
	"tools/list":                ruleForward,
	"tools/call":                ruleToolsCall,
	"notifications/initialized": ruleForward,
	"notifications/cancelled":   ruleForward,
	"notifications/progress":    ruleForward,
}

func ruleOf(method string) methodAction {
	if r, ok := methodRules[method]; ok {
		return r
	}
	return ruleRefuse
}

// MCPCaller is how a request to the gateway authenticated.
type MCPCaller struct {
	// Agent is an agent token's verified agent; nil for any other
	// credential.
	Agent     *VerifiedAgent
	Principal domain.Principal
	// ProviderBearer: the credential is a Bearer token the identity
	// provider issued (its audience must name the gateway resource);
	// ProviderToken is that token, which a token exchange presents on the
	// person's behalf (a secret: never logged, never forwarded).
	ProviderBearer bool
	ProviderToken  string
	// Session and AgentID name the agent another credential acts for.
	Session, AgentID string
}

// MCPRequest is one HTTP request to /mcp/{server} as the edge read it.
// Its strings and Body may point into the edge's buffers: what outlives
// the request is copied.
type MCPRequest struct {
	Server string
	Caller MCPCaller
	// ProtocolVersion and SessionID are the MCP-Protocol-Version and
	// Mcp-Session-Id headers ("" absent).
	ProtocolVersion, SessionID string
	// Method and Name are the Mcp-Method and Mcp-Name headers, Params the
	// Mcp-Param-* headers (MCP 2026-07-28), as sent.
	Method, Name string
	Params       []ports.MCPParam
	// Body is a POST's body.
	Body []byte
	// RequestID, Client and Path name the request in the audit record a
	// held call writes when it ends; RequestID is in every error's data.
	RequestID, Client, Path string
}

// MCPAnswer is what the edge answers.
type MCPAnswer struct {
	// Status is the HTTP status. With Fail set, the edge answers its
	// error body with Status and Fail as the message.
	Status int
	Fail   string
	// SessionID is the Mcp-Session-Id to answer ("" none).
	SessionID string
	// JSON is a JSON answer; Events an SSE answer, one message each.
	JSON   []byte
	Events [][]byte
	// Held and Relay are SSE answers the edge streams: a held call's wait,
	// a server's own stream.
	Held  *MCPHeld
	Relay *MCPRelay
	// Note is the request's audit note; Refused marks a request whose ask
	// was refused; Reason is the code for the access log.
	Note    string
	Refused bool
	Reason  string
	// UpstreamError is what failed upstream, for the service's log only
	// (the client is told less).
	UpstreamError string
}

// exchange is one request on its way through the flow.
type exchange struct {
	in      *MCPRequest
	sv      domain.Server
	cl      Caller
	n       domain.GatewayCall
	answer  MCPAnswer
	session *mcpSession
	// modern: the client speaks MCP 2026-07-28; p is the params read.
	modern bool
	p      mcpwire.Params
	// ours is the approval a 2026 client's retry brings back (its
	// requestState), nil for any other request.
	ours *approvalState
}

// done is the answer with its note.
func (x *exchange) done() MCPAnswer {
	x.answer.Note = x.n.String()
	return x.answer
}

// refuse marks the request refused with reason.
func (x *exchange) refuse(reason string) {
	x.answer.Refused, x.answer.Reason = true, reason
}

// rpcError answers a JSON-RPC error to request id with HTTP status (200
// for a decided refusal: the client's SDK reports it for that call).
func (x *exchange) rpcError(status int, id json.RawMessage, code int, reason, msg string) MCPAnswer {
	return x.rpcErrorData(status, id, code, reason, msg, &mcpwire.ErrorData{})
}

// rpcErrorData is rpcError with more in the error's data.
func (x *exchange) rpcErrorData(status int, id json.RawMessage, code int, reason, msg string, data *mcpwire.ErrorData) MCPAnswer {
	data.Reason, data.RequestID = reason, x.in.RequestID
	x.answer.Status, x.answer.Reason = status, reason
	x.answer.JSON = mcpwire.ErrorResponse(id, mcpwire.ErrorObject{Code: code, Message: msg, Data: data})
	return x.done()
}

// fail answers an HTTP error.
func (x *exchange) fail(status int, msg string) MCPAnswer {
	x.answer.Status, x.answer.Fail = status, msg
	return x.done()
}

// result answers the result of request id (200).
func (x *exchange) result(id json.RawMessage, result json.RawMessage) MCPAnswer {
	x.answer.Status = 200
	x.answer.JSON = mcpwire.Encode(mcpwire.Message{JSONRPC: "2.0", ID: id, Result: result})
	return x.done()
}

// target finds the registered server, checks the credential is for it,
// and who calls for which agent. A failure is a refusal: the edge answers
// the error.
func (s *MCPGateway) target(ctx context.Context, in *MCPRequest) (domain.Server, Caller, error) {
	sv, err := s.decide.Server(ctx, in.Server)
	if err != nil {
		return sv, Caller{}, err
	}
	who := in.Caller
	if v := who.Agent; v != nil {
		if !domain.TokenAudienceIs(v.Grant.Audience, sv) {
			return sv, Caller{}, &domain.Refusal{Code: domain.ReasonGatewayOtherServer, Missing: domain.PermToolCallsWrite,
				Message: fmt.Sprintf("the agent token is for %s, not server %s (%s)", v.Grant.Audience, sv.Name, sv.URL)}
		}
		return sv, AgentCaller(v), nil
	}
	if who.ProviderBearer && !s.providerTokenFor(who.Principal, sv) {
		return sv, Caller{}, &domain.Refusal{Code: domain.ReasonGatewayResource, Missing: domain.PermToolCallsWrite,
			Message: fmt.Sprintf("the access token's audience %q does not name the gateway resource %s (RFC 8707: ask the provider for a token with resource=%s)",
				who.Principal.Audience, s.ResourceURL(sv.Name), s.ResourceURL(sv.Name))}
	}
	cl, err := s.decide.PrincipalCaller(ctx, who.Principal, who.Session, who.AgentID)
	return sv, cl, err
}

// providerTokenFor is the gateway's one check that a provider access
// token was issued for this gateway resource (RFC 8707): an aud value is
// the resource the metadata names ({ResourceBase}/mcp/{server}) or the
// server's registered URL, compared canonically.
func (s *MCPGateway) providerTokenFor(p domain.Principal, sv domain.Server) bool {
	var want []string
	for _, r := range []string{s.ResourceURL(sv.Name), sv.URL} {
		if c, err := domain.CanonicalResource(r); err == nil {
			want = append(want, c)
		}
	}
	for _, a := range p.Audience {
		if c, err := domain.CanonicalResource(a); err == nil && slices.Contains(want, c) {
			return true
		}
	}
	return false
}

// start resolves the request's target into x: the error to answer when
// it fails (x's answer then carries the refusal).
func (s *MCPGateway) start(ctx context.Context, x *exchange) error {
	sv, cl, err := s.target(ctx, x.in)
	if err != nil {
		x.refuse("")
		return err
	}
	x.sv, x.cl = sv, cl
	x.n = domain.GatewayCall{Server: sv.Name, Chain: chainOf(cl)}
	return nil
}

// chainOf is the caller as the audit names it: user → agent → sub-agent
// (an agent token), or the principal → the agent it acts for, with the
// credential that principal presented.
func chainOf(cl Caller) string {
	who := cl.Subject
	if cl.Grant == nil {
		who += " (" + string(cl.Principal.Method)
		if cl.Principal.Key != nil {
			who += " key " + cl.Principal.Key.ID
		}
		who += ")"
	}
	return who + " → " + strings.Join(cl.Chain, " → ")
}

// ownerOf binds an MCP session to who opened it and for which agent: the
// agent token's agent, or the principal (and its key) acting for an agent.
func ownerOf(cl Caller) string {
	who := "agent"
	if cl.Grant == nil {
		who = string(cl.Principal.Method) + "\x00" + cl.Principal.Subject
		if cl.Principal.Key != nil {
			who += "\x00" + cl.Principal.Key.ID
		}
	}
	return who + "\x00" + cl.Subject + "\x00" + cl.Session + "\x00" + strings.Join(cl.Chain, "\x00")
}

// mcpSession finds the caller's MCP session by its header; an unknown
// one, or one of another caller, is 404 (the client starts anew).
func (s *MCPGateway) mcpSession(x *exchange) error {
	id := x.in.SessionID
	if id == "" {
		return fmt.Errorf("%s header required after initialize: %w", mcpwire.HeaderSessionID, domain.ErrInvalidInput)
	}
	ms, ok := s.sessions.get(id, x.sv.Name, ownerOf(x.cl))
	if !ok {
		x.answer.Reason = domain.ReasonGatewaySession
		return fmt.Errorf("MCP session unknown or ended; initialize a new one: %w", domain.ErrNotFound)
	}
	x.session = ms
	return nil
}

// AuditedArguments is what an audit record shows of a tool call's
// canonical arguments besides their hash: them, cut to AuditArgumentBytes,
// when the operator opted in (gateway.auditArguments); else "".
func (s *MCPGateway) AuditedArguments(canonical []byte) string {
	if s.set.AuditArgumentBytes <= 0 {
		return ""
	}
	return bounded(string(canonical), s.set.AuditArgumentBytes)
}

// maxNoteTool bounds a tool name (the client's bytes) in an audit record.
const maxNoteTool = 128

// bounded cuts s to at most n bytes, saying so.
func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "… (cut)"
}

// Post decides one message a client posts, of either era: a 2025 one
// within its MCP session (Mcp-Session-Id), a 2026-07-28 one on its own.
// An error is answered by the edge (the answer then carries the note and
// whether it was a refusal).
func (s *MCPGateway) Post(ctx context.Context, in *MCPRequest) (MCPAnswer, error) {
	xs := exchange{in: in}
	x := &xs
	if err := s.start(ctx, x); err != nil {
		return x.answer, err
	}
	if int64(len(in.Body)) > s.set.MaxMessageBytes {
		x.refuse("")
		return x.fail(413, fmt.Sprintf("a message may have at most %d bytes", s.set.MaxMessageBytes)), nil
	}
	msg, err := mcpwire.Parse(in.Body)
	if err == nil {
		// A name twice could mean one call here and another to a server
		// that reads the first of two (see strictjson): never relayed.
		if err = strictjson.UniqueNames(in.Body); err != nil {
			err = fmt.Errorf("%w: %v", mcpwire.ErrInvalid, err)
		}
	}
	if err != nil {
		x.refuse("")
		x.n.Method, x.n.Reason = "(malformed)", domain.ReasonGatewayMalformed
		if errors.Is(err, mcpwire.ErrBatch) {
			x.n.Reason = domain.ReasonGatewayBatch
		}
		return x.rpcError(400, nil, mcpwire.Code(err), x.n.Reason, err.Error()), nil
	}
	x.n.Method = msg.Method
	if msg.IsResponse() {
		// The gateway relays no server request (sampling, elicitation,
		// roots are not offered), so no response was ever asked for.
		x.refuse("")
		x.n.Method, x.n.Reason = "(response)", domain.ReasonGatewayResponse
		return x.rpcError(400, msg.ID, mcpwire.CodeInvalidRequest, x.n.Reason,
			"the gateway relays no server requests, so it takes no responses"), nil
	}
	if msg.IsNotification() && !strings.HasPrefix(msg.Method, "notifications/") {
		// A request without an id: it could get no answer, so it is not
		// decided, and a notification gets no JSON-RPC answer either.
		x.refuse(domain.ReasonGatewayMalformed)
		x.n.Reason = domain.ReasonGatewayMalformed
		return x.fail(400, "method "+msg.Method+" is a request: it needs an id"), nil
	}
	x.p, err = mcpwire.ParseParams(msg.Params)
	if err != nil && msg.Method == "tools/call" {
		x.refuse("")
		x.n.Decision, x.n.Reason = "deny", domain.ReasonGatewayMalformed
		return x.rpcError(200, msg.ID, mcpwire.CodeInvalidParams, domain.ReasonGatewayMalformed, "tools/call needs params.name and an object params.arguments"), nil
	}
	if mcpwire.IsModern(in.ProtocolVersion, x.p.Meta.ProtocolVersion) {
		x.modern = true
		return s.modernPost(ctx, x, msg)
	}
	return s.legacyPost(ctx, x, msg)
}

// unsupported answers a protocol version the gateway does not speak
// (-32022, UnsupportedProtocolVersionError of MCP 2026-07-28, with the
// versions it speaks).
func (x *exchange) unsupported(id json.RawMessage, version string) MCPAnswer {
	x.refuse("")
	x.n.Reason = domain.ReasonGatewayProtoVersion
	return x.rpcErrorData(400, id, mcpwire.CodeUnsupportedVersion, x.n.Reason,
		"MCP-Protocol-Version "+version+" is not supported; supported: "+strings.Join(supportedVersions, ", "),
		&mcpwire.ErrorData{Supported: supportedVersions, Requested: &version})
}

// legacyPost decides a message of a 2025 client, within its MCP session.
func (s *MCPGateway) legacyPost(ctx context.Context, x *exchange, msg mcpwire.Message) (MCPAnswer, error) {
	if v := x.in.ProtocolVersion; v != "" && !slices.Contains(legacyVersions, v) {
		return x.unsupported(msg.ID, v), nil
	}
	if msg.Method != "initialize" {
		if err := s.mcpSession(x); err != nil {
			x.refuse(x.answer.Reason)
			return x.done(), err
		}
	}
	switch ruleOf(msg.Method) {
	case ruleRefuse:
		x.refuse("")
		x.n.Decision, x.n.Reason = "deny", domain.ReasonGatewayMethod
		if msg.IsNotification() {
			x.answer.Status = 202 // a notification gets no answer; it goes nowhere
			return x.done(), nil
		}
		return x.rpcError(200, msg.ID, mcpwire.CodeMethodNotFound, x.n.Reason,
			"method "+msg.Method+" is not offered through the agentauth gateway"), nil
	case ruleToolsCall:
		return s.toolsCall(ctx, x, msg)
	}
	x.n.Decision = "allow"
	if msg.Method == "notifications/cancelled" {
		s.cancelled(ctx, x, msg)
	}
	body := x.in.Body
	if x.session == nil || x.session.Upstream == "" {
		// No session with the server: it may speak 2026-07-28, which has
		// no handshake, no ping and no client notifications.
		era, err := s.eraOf(ctx, x)
		if err != nil {
			return s.upstreamFailed(x, msg.ID, err), nil
		}
		if era.modern {
			switch {
			case msg.Method == "initialize":
				return s.initializeHere(x, msg, era)
			case msg.Method == "ping":
				return x.result(msg.ID, json.RawMessage(`{}`)), nil
			case msg.IsNotification():
				x.answer.Status = 202
				return x.done(), nil
			}
		}
	}
	if msg.Method == "initialize" {
		var err error
		if body, err = mcpwire.WithoutClientCapabilities(msg); err != nil {
			x.refuse("")
			return x.rpcError(400, msg.ID, mcpwire.CodeInvalidParams, domain.ReasonGatewayMalformed, err.Error()), nil
		}
	}
	rep, ok, err := s.forward(ctx, x, msg, body)
	if !ok || err != nil {
		return x.done(), err
	}
	if msg.Method == "tools/list" && len(rep.Messages) > 0 {
		last := &rep.Messages[len(rep.Messages)-1]
		if last.Result, err = s.callableTools(ctx, x, last.Result); err != nil {
			return x.done(), err
		}
	}
	if msg.Method == "initialize" {
		id, err := s.sessions.add(x.sv.Name, ownerOf(x.cl), rep.SessionID)
		if err != nil {
			return x.done(), err
		}
		x.answer.SessionID = id
	}
	reply(x, rep)
	return x.done(), nil
}

// initializeHere answers a 2025 client's initialize for a 2026-07-28
// server, which has no handshake: the version the client asked when the
// gateway speaks it (else the newest it speaks), the server's identity and
// instructions, and tools as its only capability. The session it opens
// has no server session.
func (s *MCPGateway) initializeHere(x *exchange, msg mcpwire.Message, era upstreamEra) (MCPAnswer, error) {
	var asked struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(msg.Params, &asked)
	version := legacyVersion
	if slices.Contains(legacyVersions, asked.ProtocolVersion) {
		version = asked.ProtocolVersion
	}
	res := map[string]any{"protocolVersion": version, "capabilities": map[string]any{"tools": map[string]any{}},
		"serverInfo": serverInfoOf(era)}
	if era.instructions != "" {
		res["instructions"] = era.instructions
	}
	id, err := s.sessions.add(x.sv.Name, ownerOf(x.cl), "")
	if err != nil {
		return x.done(), err
	}
	x.answer.SessionID = id
	b, _ := json.Marshal(res)
	return x.result(msg.ID, b), nil
}

// serverInfoOf is the server's identity as it gave it, else the gateway's.
func serverInfoOf(era upstreamEra) json.RawMessage {
	if len(era.serverInfo) > 0 && era.serverInfo[0] == '{' {
		return era.serverInfo
	}
	return json.RawMessage(`{"name":"agentauth-gateway","version":"1"}`)
}

// upstreamFailed answers that the server could not be asked: for a
// person without a working credential for it, that they are not
// connected, and where to connect.
func (s *MCPGateway) upstreamFailed(x *exchange, id json.RawMessage, err error) MCPAnswer {
	var nc *NotConnectedError
	if errors.As(err, &nc) {
		return s.notConnected(x, id, nc)
	}
	x.n.Reason, x.answer.UpstreamError = domain.ReasonGatewayUpstream, err.Error()
	if id == nil {
		return x.fail(502, "server "+x.sv.Name+" failed: "+upstreamSummary(err))
	}
	return x.rpcError(200, id, mcpwire.CodeUpstream, domain.ReasonGatewayUpstream, "server "+x.sv.Name+" failed: "+upstreamSummary(err))
}

// forward posts msg (as body) upstream, in the server's era, within the
// call timeout. It answers an upstream failure itself (ok false) or
// returns the error to answer.
func (s *MCPGateway) forward(ctx context.Context, x *exchange, msg mcpwire.Message, body []byte) (ports.MCPReply, bool, error) {
	req, err := s.outbound(ctx, x, msg, body, false)
	if err != nil {
		s.upstreamFailed(x, msg.ID, err)
		return ports.MCPReply{}, false, nil
	}
	rep, err := s.post(ctx, x, req, msg.ID)
	if err == nil && rep.Status == 404 && x.modern && req.SessionID != "" {
		// The 2025 session the gateway held with the server ended: once
		// more in a new one (the server ran nothing in an unknown session).
		if req, err = s.outbound(ctx, x, msg, body, true); err != nil {
			s.upstreamFailed(x, msg.ID, err)
			return ports.MCPReply{}, false, nil
		}
		rep, err = s.post(ctx, x, req, msg.ID)
	}
	switch {
	case err != nil:
		s.upstreamFailed(x, msg.ID, err)
		return rep, false, nil
	case rep.Status == 404 && x.session != nil && x.session.Upstream != "":
		// The server ended the session: so does the gateway.
		s.sessions.remove(x.in.SessionID, x.session)
		x.n.Reason = domain.ReasonGatewaySession
		return rep, false, fmt.Errorf("the server ended the MCP session; initialize a new one: %w", domain.ErrNotFound)
	case rep.Status < 200 || rep.Status > 299:
		if rep.Status == 400 || rep.Status == 404 || rep.Status == 405 {
			s.forgetEra(x.sv) // it may have changed era: learnt again next time
		}
		x.n.Reason = domain.ReasonGatewayUpstream
		if msg.ID == nil {
			x.fail(502, fmt.Sprintf("the server answered %d", rep.Status))
			return rep, false, nil
		}
		x.rpcError(200, msg.ID, mcpwire.CodeUpstream, domain.ReasonGatewayUpstream, fmt.Sprintf("server %s answered HTTP %d", x.sv.Name, rep.Status))
		return rep, false, nil
	}
	if !x.modern && req.ProtocolVersion == mcpwire.Modern && len(rep.Messages) > 0 && inputRequired(rep.Messages[len(rep.Messages)-1].Result) {
		s.upstreamFailed(x, msg.ID, errInputRequired)
		return rep, false, nil
	}
	return rep, true, nil
}

// post sends req and notes the server's answer.
func (s *MCPGateway) post(ctx context.Context, x *exchange, req ports.MCPRequest, id json.RawMessage) (ports.MCPReply, error) {
	ctx, cancel := context.WithTimeout(ctx, s.set.CallTimeout)
	defer cancel()
	start := time.Now()
	rep, err := s.up.Post(ctx, req, id)
	x.n.Upstream, x.n.Duration, x.n.Dropped = rep.Status, time.Since(start), rep.Dropped
	if x.n.Upstream == 0 {
		x.n.Upstream = -1 // no answer
	}
	return rep, err
}

// inputRequired: result is a 2026-07-28 input_required result.
func inputRequired(result json.RawMessage) bool {
	var r struct {
		ResultType string `json:"resultType"`
	}
	return len(result) > 0 && json.Unmarshal(result, &r) == nil && r.ResultType == "input_required"
}

// reply answers what the server answered: its status for a notification,
// else its messages as JSON (one) or SSE (notifications, then the response).
func reply(x *exchange, rep ports.MCPReply) {
	x.answer.Status = 200
	switch {
	case len(rep.Messages) == 0:
		x.answer.Status = rep.Status
	case !rep.SSE:
		x.answer.JSON = mcpwire.Encode(rep.Messages[0])
	default:
		x.answer.Events = make([][]byte, len(rep.Messages))
		for i, m := range rep.Messages {
			x.answer.Events[i] = mcpwire.Encode(m)
		}
	}
}

// callableTools keeps, of a tools/list result, the tools the agent may
// call now, after learning their header bindings (all of them: another
// agent may call others).
func (s *MCPGateway) callableTools(ctx context.Context, x *exchange, result json.RawMessage) (json.RawMessage, error) {
	s.learnTools(x.sv, result)
	list, err := mcpwire.ReadToolList(result)
	if err != nil {
		return nil, err
	}
	ok, err := s.decide.Callable(ctx, x.cl, x.sv.Name, list.Names)
	if err != nil {
		return nil, err
	}
	pinned, note, err := s.decide.CheckDefinitions(ctx, x.sv.Name, list.Names, list.Tools())
	if err != nil {
		return nil, err
	}
	x.n.Definitions = note
	for i := range ok {
		ok[i] = ok[i] && pinned[i]
	}
	return list.Keep(ok), nil
}

// toolsCall decides a tools/call as POST …/tool-calls would: allow
// forwards it, deny answers the reason and never reaches the server, ask
// holds it (2025) or asks the client to come back once approved (2026)
// until an approval bound to these arguments releases it.
func (s *MCPGateway) toolsCall(ctx context.Context, x *exchange, msg mcpwire.Message) (MCPAnswer, error) {
	p := &x.p
	if p.Name == "" {
		x.refuse("")
		x.n.Decision, x.n.Reason = "deny", domain.ReasonGatewayMalformed
		return x.rpcError(200, msg.ID, mcpwire.CodeInvalidParams, domain.ReasonGatewayMalformed, "tools/call needs params.name and an object params.arguments"), nil
	}
	x.n.Tool = bounded(p.Name, maxNoteTool)
	canonical, err := mcpwire.CanonicalArguments(p.Arguments)
	if err != nil {
		x.refuse("")
		x.n.Decision, x.n.Reason = "deny", domain.ReasonGatewayMalformed
		return x.rpcError(200, msg.ID, mcpwire.CodeInvalidParams, domain.ReasonGatewayMalformed, "tools/call arguments must be a JSON object"), nil
	}
	x.n.Args = domain.ArgumentsHash(canonical)
	x.n.ArgsText = s.AuditedArguments(canonical)
	if x.modern && p.RequestState != "" {
		if a, ok, err := s.approvalRetry(ctx, x, msg, canonical); ok || err != nil {
			return a, err
		}
	}
	call, err := s.decide.Decide(ctx, x.cl, x.sv.Name, p.Name, canonical)
	if err == nil && call.Decision.Effect == domain.EffectAsk {
		call, err = s.decide.Hold(ctx, x.cl, call, s.holdOf(x, msg))
	}
	if errors.Is(err, domain.ErrInvalidInput) {
		// A name outside the tool-name charset: no such tool is registered.
		x.refuse("")
		x.n.Decision, x.n.Reason = "deny", domain.ReasonGatewayUnknown
		return x.rpcError(200, msg.ID, mcpwire.CodeDenied, x.n.Reason, err.Error()), nil
	}
	if err != nil {
		return x.done(), err
	}
	x.n.Call, x.n.Decision, x.n.Reason = call.ID, string(call.Decision.Effect), call.Decision.Reason
	switch call.Decision.Effect {
	case domain.EffectAllow:
		return s.forwardCall(ctx, x, msg)
	case domain.EffectAsk:
		if x.modern {
			return s.askForApproval(x, msg, call)
		}
		return s.hold(ctx, x, msg, call)
	}
	x.refuse("")
	return x.rpcError(200, msg.ID, mcpwire.CodeDenied, call.Decision.Reason, call.Decision.Message), nil
}

// forwardCall forwards an allowed (or approved) tools/call and answers
// the server's answer.
func (s *MCPGateway) forwardCall(ctx context.Context, x *exchange, msg mcpwire.Message) (MCPAnswer, error) {
	body, err := withoutOwnInput(x, x.in.Body)
	if err != nil {
		return s.upstreamFailed(x, msg.ID, err), nil
	}
	rep, ok, err := s.forward(ctx, x, msg, body)
	if ok && err == nil {
		if x.modern {
			complete(rep)
		}
		reply(x, rep)
	}
	return x.done(), err
}

// upstreamSummary says what failed without the server's internals.
func upstreamSummary(err error) string {
	switch msg := err.Error(); {
	case strings.Contains(msg, "deadline exceeded"):
		return "no answer in time"
	case strings.Contains(msg, "over "):
		return "the answer was too large"
	case errors.Is(err, errInputRequired):
		return err.Error()
	default:
		return "unreachable or answered what was not asked"
	}
}
