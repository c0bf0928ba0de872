package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/adapters/mcpproxy"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/strictjson"
	"github.com/agentauth/agentauth/ports"
)

// Gateway serves the MCP gateway: /mcp/{server} on the API port, MCP's
// Streamable HTTP transport in front of each registered server's
// endpoint. Every message is decided (see docs/gateway.md for the rule of
// each method), every request audited; the caller's credential never goes
// upstream, the server's own credential (a file in CredentialsDir) does.
// It calls the Application's Gateway; Config.Gateway nil leaves it out.
type Gateway struct {
	Upstream *mcpproxy.Upstream
	// CredentialsDir holds the servers' upstream credentials by name.
	CredentialsDir string
	// ResourceBase is the public URL the gateway's resources are named
	// under (the API's, with the base path): {ResourceBase}/mcp/{server}.
	ResourceBase string
	// MetadataURL is the public URL of the listener serving the
	// protected-resource metadata without credentials; "" names none.
	MetadataURL          string
	AuthorizationServers []string
	CallTimeout          time.Duration
	AskTimeout           time.Duration
	StreamTimeout        time.Duration
	MaxMessageBytes      int64
	// SessionKey (32 bytes) seals the gateway's MCP session ids; every
	// instance of a cluster needs the same. Nil: a random key, which only
	// this process opens.
	SessionKey []byte
	// AuditArgumentBytes > 0 records each tools/call's canonical arguments
	// in its audit record, cut to that many bytes; 0 records their hash only.
	AuditArgumentBytes int
	// Poll is how often a held call reads its approval; KeepAlive how
	// often the held stream gets an SSE comment.
	Poll      time.Duration
	KeepAlive time.Duration
}

// Reason codes of the gateway's refusals (the decisions' own codes are
// domain.Reason*).
const (
	ReasonGatewayAgentNamed   = "gateway_agent_required"
	ReasonGatewayOtherServer  = "token_audience_other_server"
	ReasonGatewayResource     = "token_audience_not_gateway_resource"
	ReasonGatewayMethod       = "gateway_method_not_offered"
	ReasonGatewayRejected     = "approval_rejected"
	ReasonGatewayTimeout      = "approval_timeout"
	ReasonGatewayUpstream     = "upstream_failed"
	ReasonGatewayMalformed    = "jsonrpc_malformed"
	ReasonGatewayBatch        = "jsonrpc_batch"
	ReasonGatewayResponse     = "jsonrpc_response_not_asked"
	ReasonGatewaySession      = "mcp_session_unknown"
	ReasonGatewayProtoVersion = "mcp_protocol_version_unsupported"
)

// protocolVersions are the MCP versions whose transport the gateway speaks.
var protocolVersions = []string{"2025-03-26", "2025-06-18", "2025-11-25"}

const mcpPath = "/mcp/:server"

// Headers by which a caller other than an agent token names the agent of
// a session it acts for (an agent token names its own).
const (
	HeaderGatewaySession = "X-Agentauth-Session"
	HeaderGatewayAgent   = "X-Agentauth-Agent"
)

// gatewayRoutes registers the gateway, after authentication.
func (s *Server) gatewayRoutes() {
	if s.cfg.Gateway == nil {
		return
	}
	sessions, err := newMCPSessions(s.cfg.Gateway.SessionKey)
	if err != nil {
		panic("rest: Gateway.SessionKey: " + err.Error()) // a bug of the wiring: it derives 32 bytes
	}
	s.gwSessions = sessions
	s.gwCreds = newCredentialCache(s.cfg.Gateway.CredentialsDir)
	s.app.Post(mcpPath, s.requireGateway, s.mcpPost)
	s.app.Get(mcpPath, s.requireGateway, s.mcpGet)
	s.app.Delete(mcpPath, s.requireGateway, s.mcpDelete)
}

// requireGateway authorizes the caller: an agent token (decided for its
// agent, as POST …/tool-calls decides it), or any other credential whose
// roles (and key's scope) hold toolcalls:write and that names the agent
// it acts for (HeaderGatewaySession, HeaderGatewayAgent). Which server
// the credential is for is checked once the server is known
// (gatewayTarget).
func (s *Server) requireGateway(c *fiber.Ctx) error {
	st := stateOf(c)
	if st.agent != nil {
		st.decision, st.decided = domain.Decision{Allowed: true, Permission: domain.PermToolCallsWrite, Role: roleAgentToken}, true
		return c.Next()
	}
	st.decision, st.decided = s.uc.Authorizer.Allow(st.principal, domain.PermToolCallsWrite), true
	if !st.decision.Allowed {
		return &domain.AccessDenied{Decision: st.decision}
	}
	if c.Get(HeaderGatewaySession) == "" || c.Get(HeaderGatewayAgent) == "" {
		refused(c)
		return &domain.Refusal{Code: ReasonGatewayAgentNamed, Missing: domain.PermToolCallsWrite,
			Message: "name the agent you act for with the headers " + HeaderGatewaySession + " and " + HeaderGatewayAgent +
				" (a session you may manage and one of its agents), or call with that agent's token"}
	}
	return c.Next()
}

// tokenForServer is the gateway's one check that an agent token was
// minted for this server: its audience is the server's canonical resource
// URL (RFC 9068, RFC 8707).
func tokenForServer(g domain.AgentGrant, sv domain.Server) bool {
	return domain.TokenAudienceIs(g.Audience, sv)
}

// providerTokenFor is the gateway's one check that a provider access
// token was issued for this gateway resource (RFC 8707): an aud value is
// the resource the metadata names ({ResourceBase}/mcp/{server}) or the
// server's registered URL, compared canonically.
func (g *Gateway) providerTokenFor(p domain.Principal, sv domain.Server) bool {
	var want []string
	for _, r := range []string{g.resourceURL(sv.Name), sv.URL} {
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

// providerBearer reports whether the request authenticated with a Bearer
// token the identity provider issued: neither an agent token nor a key
// (API, debug or managed), which carry no audience.
func providerBearer(c *fiber.Ctx, p domain.Principal) bool {
	cred, err := credentialFrom(c)
	return err == nil && cred.Kind == ports.CredentialBearer && p.Key == nil &&
		p.Method != domain.MethodAPIKey && p.Method != domain.MethodDebug
}

// gatewayCall is what the audit note of one gateway request says.
type gatewayCall = domain.GatewayCall

// maxNoteTool bounds a tool name (the client's bytes) in an audit record.
const maxNoteTool = 128

// bounded cuts s to at most n bytes, saying so.
func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "… (cut)"
}

// chainOf is the caller as the audit names it: user → agent → sub-agent
// (an agent token), or the principal → the agent it acts for, with the
// credential that principal presented.
func chainOf(cl app.Caller) string {
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

// mcpError answers a JSON-RPC error to request id with HTTP status
// (200 for a decided refusal: the client's SDK reports it for that call).
func mcpError(c *fiber.Ctx, status int, id json.RawMessage, code int, reason, msg string) error {
	stateOf(c).reason = reason
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(status).Send(mcpproxy.ErrorResponse(id, mcpproxy.ErrorObject{Code: code, Message: msg,
		Data: map[string]string{"reason_code": reason, "request_id": requestID(c)}}))
}

// gatewayTarget finds the registered server, checks the credential is for
// it, and returns who calls for which agent; every failure is answered
// (and audited as a denial) by the caller.
func (s *Server) gatewayTarget(c *fiber.Ctx) (domain.Server, app.Caller, error) {
	gw := s.cfg.Gateway
	sv, err := s.uc.Gateway.Server(c.UserContext(), c.Params("server"))
	if err != nil {
		refused(c)
		return sv, app.Caller{}, err
	}
	st := stateOf(c)
	if g := st.agent; g != nil {
		if !tokenForServer(*g, sv) {
			refused(c)
			return sv, app.Caller{}, &domain.Refusal{Code: ReasonGatewayOtherServer, Missing: domain.PermToolCallsWrite,
				Message: fmt.Sprintf("the agent token is for %s, not server %s (%s)", g.Audience, sv.Name, sv.URL)}
		}
		return sv, app.AgentCaller(verifiedAgentOf(c)), nil
	}
	if providerBearer(c, st.principal) && !gw.providerTokenFor(st.principal, sv) {
		refused(c)
		return sv, app.Caller{}, &domain.Refusal{Code: ReasonGatewayResource, Missing: domain.PermToolCallsWrite,
			Message: fmt.Sprintf("the access token's audience %q does not name the gateway resource %s (RFC 8707: ask the provider for a token with resource=%s)",
				st.principal.Audience, gw.resourceURL(sv.Name), gw.resourceURL(sv.Name))}
	}
	cl, err := s.uc.Gateway.PrincipalCaller(c.UserContext(), st.principal, c.Get(HeaderGatewaySession), c.Get(HeaderGatewayAgent))
	if err != nil {
		refused(c)
	}
	return sv, cl, err
}

// mcpSession finds the caller's MCP session by its header; an unknown
// one, or one of another caller, is 404 (the client starts anew).
func (s *Server) mcpSession(c *fiber.Ctx, sv domain.Server, cl app.Caller) (*mcpSession, error) {
	id := c.Get(mcpproxy.HeaderSessionID)
	if id == "" {
		return nil, fmt.Errorf("%s header required after initialize: %w", mcpproxy.HeaderSessionID, domain.ErrInvalidInput)
	}
	ms, ok := s.gwSessions.get(id, sv.Name, ownerOf(cl))
	if !ok {
		stateOf(c).reason = ReasonGatewaySession
		return nil, fmt.Errorf("MCP session unknown or ended; initialize a new one: %w", domain.ErrNotFound)
	}
	return ms, nil
}

// ownerOf binds an MCP session to who opened it and for which agent: the
// agent token's agent, or the principal (and its key) acting for an agent.
func ownerOf(cl app.Caller) string {
	who := "agent"
	if cl.Grant == nil {
		who = string(cl.Principal.Method) + "\x00" + cl.Principal.Subject
		if cl.Principal.Key != nil {
			who += "\x00" + cl.Principal.Key.ID
		}
	}
	return who + "\x00" + cl.Subject + "\x00" + cl.Session + "\x00" + strings.Join(cl.Chain, "\x00")
}

func (s *Server) upstreamRequest(sv domain.Server, ms *mcpSession, version string, body []byte) (mcpproxy.Request, error) {
	cred, err := s.gwCreds.get(sv.Credential)
	r := mcpproxy.Request{Endpoint: sv.Endpoint, Credential: cred, ProtocolVersion: version, Body: body}
	if ms != nil {
		r.SessionID = ms.Upstream
	}
	return r, err
}

// mcpPost decides one message a client posts.
func (s *Server) mcpPost(c *fiber.Ctx) error {
	gw := s.cfg.Gateway
	sv, cl, err := s.gatewayTarget(c)
	if err != nil {
		return err
	}
	n := gatewayCall{Server: sv.Name, Chain: chainOf(cl)}
	defer func() { note(c, n.String()) }()
	body := c.Body()
	if int64(len(body)) > gw.MaxMessageBytes {
		refused(c)
		return fiber.NewError(fiber.StatusRequestEntityTooLarge, fmt.Sprintf("a message may have at most %d bytes", gw.MaxMessageBytes))
	}
	msg, err := mcpproxy.Parse(body)
	if err == nil {
		// A name twice could mean one call here and another to a server
		// that reads the first of two (see strictjson): never relayed.
		if err = strictjson.UniqueNames(body); err != nil {
			err = fmt.Errorf("%w: %v", mcpproxy.ErrInvalid, err)
		}
	}
	if err != nil {
		refused(c)
		n.Method, n.Reason = "(malformed)", ReasonGatewayMalformed
		if errors.Is(err, mcpproxy.ErrBatch) {
			n.Reason = ReasonGatewayBatch
		}
		return mcpError(c, fiber.StatusBadRequest, nil, mcpproxy.Code(err), n.Reason, err.Error())
	}
	n.Method = msg.Method
	version := c.Get(mcpproxy.HeaderProtocolVersion)
	if version != "" && !slices.Contains(protocolVersions, version) {
		refused(c)
		n.Reason = ReasonGatewayProtoVersion
		return mcpError(c, fiber.StatusBadRequest, msg.ID, mcpproxy.CodeInvalidRequest, n.Reason,
			"MCP-Protocol-Version "+version+" is not supported; supported: "+strings.Join(protocolVersions, ", "))
	}
	if msg.IsResponse() {
		// The gateway relays no server request (sampling, elicitation,
		// roots are not offered), so no response was ever asked for.
		refused(c)
		n.Method, n.Reason = "(response)", ReasonGatewayResponse
		return mcpError(c, fiber.StatusBadRequest, msg.ID, mcpproxy.CodeInvalidRequest, n.Reason,
			"the gateway relays no server requests, so it takes no responses")
	}
	var ms *mcpSession
	if msg.Method != "initialize" {
		if ms, err = s.mcpSession(c, sv, cl); err != nil {
			refused(c)
			return err
		}
	}
	switch ruleOf(msg.Method) {
	case ruleRefuse:
		refused(c)
		n.Decision, n.Reason = "deny", ReasonGatewayMethod
		if msg.IsNotification() {
			return c.SendStatus(fiber.StatusAccepted) // a notification gets no answer; it goes nowhere
		}
		return mcpError(c, fiber.StatusOK, msg.ID, mcpproxy.CodeMethodNotFound, n.Reason,
			"method "+msg.Method+" is not offered through the agentauth gateway")
	case ruleToolsCall:
		return s.mcpToolsCall(c, sv, cl, ms, version, msg, &n)
	}
	if msg.Method == "initialize" {
		if body, err = withoutClientCapabilities(msg); err != nil {
			refused(c)
			return mcpError(c, fiber.StatusBadRequest, msg.ID, mcpproxy.CodeInvalidParams, ReasonGatewayMalformed, err.Error())
		}
	}
	n.Decision = "allow"
	rep, err := s.forward(c, sv, ms, version, body, msg.ID, &n)
	if errors.Is(err, errAnswered) {
		return nil
	}
	if err != nil {
		return err
	}
	if msg.Method == "tools/list" && len(rep.Messages) > 0 {
		last := &rep.Messages[len(rep.Messages)-1]
		if last.Result, err = s.callableTools(c, sv, cl, last.Result); err != nil {
			return err
		}
	}
	if msg.Method == "initialize" {
		id, err := s.gwSessions.add(sv.Name, ownerOf(cl), rep.SessionID)
		if err != nil {
			return err
		}
		c.Set(mcpproxy.HeaderSessionID, id)
	}
	return writeReply(c, rep)
}

// errAnswered: forward has answered the client itself (an upstream
// failure); the handler has nothing more to send.
var errAnswered = errors.New("answered")

// answered is mcpError for forward: the answer is sent, say so.
func answered(c *fiber.Ctx, id json.RawMessage, code int, reason, msg string) error {
	if err := mcpError(c, fiber.StatusOK, id, code, reason, msg); err != nil {
		return err
	}
	return errAnswered
}

// forward posts body upstream within the call timeout and answers an
// upstream failure itself (returning errAnswered).
func (s *Server) forward(c *fiber.Ctx, sv domain.Server, ms *mcpSession, version string, body []byte, id json.RawMessage, n *gatewayCall) (mcpproxy.Reply, error) {
	req, err := s.upstreamRequest(sv, ms, version, body)
	if err != nil {
		n.Reason = ReasonGatewayUpstream
		return mcpproxy.Reply{}, answered(c, id, mcpproxy.CodeUpstream, ReasonGatewayUpstream, "the gateway has no credential for server "+sv.Name)
	}
	ctx, cancel := contextWithTimeout(c, s.cfg.Gateway.CallTimeout)
	defer cancel()
	start := time.Now()
	rep, err := s.cfg.Gateway.Upstream.Post(ctx, req, id)
	n.Upstream, n.Duration, n.Dropped = rep.Status, time.Since(start), rep.Dropped
	if n.Upstream == 0 {
		n.Upstream = -1 // no answer
	}
	switch {
	case err != nil:
		n.Reason = ReasonGatewayUpstream
		s.log.Info("mcp upstream failed: " + err.Error())
		if id == nil {
			return rep, fiber.NewError(fiber.StatusBadGateway, "the server did not take the notification")
		}
		return rep, answered(c, id, mcpproxy.CodeUpstream, ReasonGatewayUpstream, "server "+sv.Name+" failed: "+upstreamSummary(err))
	case rep.Status == fiber.StatusNotFound && ms != nil:
		// The server ended the session: so does the gateway.
		s.gwSessions.remove(c.Get(mcpproxy.HeaderSessionID), ms)
		n.Reason = ReasonGatewaySession
		return rep, fmt.Errorf("the server ended the MCP session; initialize a new one: %w", domain.ErrNotFound)
	case rep.Status < 200 || rep.Status > 299:
		n.Reason = ReasonGatewayUpstream
		if id == nil {
			return rep, fiber.NewError(fiber.StatusBadGateway, fmt.Sprintf("the server answered %d", rep.Status))
		}
		return rep, answered(c, id, mcpproxy.CodeUpstream, ReasonGatewayUpstream, fmt.Sprintf("server %s answered HTTP %d", sv.Name, rep.Status))
	}
	return rep, nil
}

// writeReply answers what the server answered: 202 for a notification,
// else its messages as JSON (one) or SSE (notifications, then the response).
func writeReply(c *fiber.Ctx, rep mcpproxy.Reply) error {
	if len(rep.Messages) == 0 {
		return c.SendStatus(rep.Status)
	}
	if !rep.SSE {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(mcpproxy.Encode(rep.Messages[0]))
	}
	c.Set(fiber.HeaderContentType, "text/event-stream")
	w := c.Response().BodyWriter()
	for _, m := range rep.Messages {
		if err := mcpproxy.WriteEvent(w, mcpproxy.Encode(m)); err != nil {
			return err
		}
	}
	return nil
}

// callableTools keeps, of a tools/list result, the tools the agent may call now.
func (s *Server) callableTools(c *fiber.Ctx, sv domain.Server, cl app.Caller, result json.RawMessage) (json.RawMessage, error) {
	var res map[string]json.RawMessage
	var tools []json.RawMessage
	if err := json.Unmarshal(result, &res); err != nil {
		return nil, fmt.Errorf("tools/list result: %w", err)
	}
	if err := json.Unmarshal(res["tools"], &tools); err != nil {
		return nil, fmt.Errorf("tools/list result: %w", err)
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		var named struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(t, &named) // an unnamed tool is never callable
		names[i] = named.Name
	}
	ok, err := s.uc.Gateway.Callable(c.UserContext(), cl, sv.Name, names)
	if err != nil {
		return nil, err
	}
	kept := make([]json.RawMessage, 0, len(tools))
	for i, t := range tools {
		if ok[i] {
			kept = append(kept, t)
		}
	}
	res["tools"], _ = json.Marshal(kept)
	return json.Marshal(res)
}

// mcpToolsCall decides a tools/call as POST …/tool-calls would: allow
// forwards it, deny answers the reason and never reaches the server, ask
// holds it until an approval (bound to these arguments) releases it.
func (s *Server) mcpToolsCall(c *fiber.Ctx, sv domain.Server, cl app.Caller, ms *mcpSession, version string, msg mcpproxy.Message, n *gatewayCall) error {
	p, err := mcpproxy.ParseToolCall(msg.Params)
	if err != nil || p.Name == "" {
		refused(c)
		n.Decision, n.Reason = "deny", ReasonGatewayMalformed
		return mcpError(c, fiber.StatusOK, msg.ID, mcpproxy.CodeInvalidParams, ReasonGatewayMalformed, "tools/call needs params.name and an object params.arguments")
	}
	n.Tool = bounded(p.Name, maxNoteTool)
	canonical, err := canonicalArguments(p.Arguments)
	if err != nil {
		refused(c)
		n.Decision, n.Reason = "deny", ReasonGatewayMalformed
		return mcpError(c, fiber.StatusOK, msg.ID, mcpproxy.CodeInvalidParams, ReasonGatewayMalformed, "tools/call arguments must be a JSON object")
	}
	n.Args = domain.ArgumentsHash(canonical)
	if gw := s.cfg.Gateway; gw.AuditArgumentBytes > 0 {
		n.ArgsText = bounded(string(canonical), gw.AuditArgumentBytes)
	}
	call, err := s.uc.Gateway.DecideCall(c.UserContext(), cl, sv.Name, p.Name, canonical)
	if errors.Is(err, domain.ErrInvalidInput) {
		// A name outside the tool-name charset: no such tool is registered.
		refused(c)
		n.Decision, n.Reason = "deny", domain.ReasonGatewayUnknown
		return mcpError(c, fiber.StatusOK, msg.ID, mcpproxy.CodeDenied, n.Reason, err.Error())
	}
	if err != nil {
		return err
	}
	n.Call, n.Decision, n.Reason = call.ID, string(call.Decision.Effect), call.Decision.Reason
	switch call.Decision.Effect {
	case domain.EffectAllow:
		rep, err := s.forward(c, sv, ms, version, c.Body(), msg.ID, n)
		if errors.Is(err, errAnswered) {
			return nil
		}
		if err != nil {
			return err
		}
		return writeReply(c, rep)
	case domain.EffectAsk:
		return s.holdForApproval(c, sv, ms, version, msg, call, *n)
	}
	refused(c)
	return mcpError(c, fiber.StatusOK, msg.ID, mcpproxy.CodeDenied, call.Decision.Reason, call.Decision.Message)
}

// withoutClientCapabilities drops sampling, elicitation and roots from an
// initialize request: the gateway relays no server request, so the server
// must not count on them.
func withoutClientCapabilities(msg mcpproxy.Message) ([]byte, error) {
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
	return mcpproxy.Encode(msg), nil
}

// upstreamSummary says what failed without the server's internals.
func upstreamSummary(err error) string {
	switch msg := err.Error(); {
	case strings.Contains(msg, "deadline exceeded"):
		return "no answer in time"
	case strings.Contains(msg, "over "):
		return "the answer was too large"
	default:
		return "unreachable or answered what was not asked"
	}
}
