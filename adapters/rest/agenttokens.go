package rest

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-jose/go-jose/v4"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/agentverify"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// AgentTokens serves agent credentials: minting tokens for a session's
// agents (the Application's AgentTokens), and the key set and metadata
// tool servers verify them with. Config.AgentTokens nil leaves them out.
type AgentTokens struct {
	Keys KeySet
	// RateLimit bounds each caller's requests to /oauth2/token (by client
	// address) and /oauth2/introspect (by authenticated subject).
	RateLimit RateLimit
}

// KeySet is the signer's public side.
type KeySet interface {
	Issuer() string
	JWKS() jose.JSONWebKeySet
}

// Paths of the key set (on the public listener under the issuer, on the
// API port to any authenticated caller, on the management listener) and of
// the RFC 8414 metadata (on the public listener only, see public.go: a
// copy elsewhere would name an issuer other than where it is served).
const (
	jwksPath     = "/.well-known/jwks.json"
	metadataPath = "/.well-known/oauth-authorization-server"
)

// tokenTypeJWT is RFC 8693's issued_token_type of a JWT.
const tokenTypeJWT = "urn:ietf:params:oauth:token-type:jwt"

func (s *Server) agentTokenRoutes() []route {
	if s.cfg.AgentTokens == nil {
		return nil
	}
	return []route{
		{fiber.MethodPost, "/api/v2/sessions/:id/agents/:agent/token", domain.PermAgentsToken, s.mintAgentToken},
		// Any authenticated caller: every built-in role holds me:read.
		{fiber.MethodGet, jwksPath, domain.PermMeRead, s.serveJWKS},
		{fiber.MethodPost, introspectionEndpoint, domain.PermTokensIntrospect, s.introspect},
	}
}

type mintRequest struct {
	Audience string   `json:"audience"`
	Tools    []string `json:"tools"`
	TTL      string   `json:"ttl"`
}

// tokenResponse is RFC 6749 §5.1's answer with RFC 8693's
// issued_token_type; scope (the tools, space-separated) is always sent.
type tokenResponse struct {
	AccessToken     string `json:"access_token"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int64  `json:"expires_in"`
	Scope           string `json:"scope"`
	IssuedTokenType string `json:"issued_token_type"`
}

func (s *Server) mintAgentToken(c *fiber.Ctx) error {
	var req mintRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	m, err := s.uc.AgentTokens.Mint(c.UserContext(), principalOf(c), c.Params("id"), c.Params("agent"), app.MintRequest(req))
	if err != nil {
		return tokenRefused(c, err)
	}
	note(c, "agent token minted: "+m.Grant.Describe())
	return s.sendToken(c, m, tokenTypeAccess)
}

// tokenRefused marks a refused token request as a denial in the audit
// log, whatever its status (an unknown audience is a 404, a ttl over the
// maximum a 400); the record's reason carries the reason code.
func tokenRefused(c *fiber.Ctx, err error) error {
	var tr *domain.TokenRefusal
	if errors.As(err, &tr) {
		refused(c)
	}
	return err
}

// agentTokenRoute is the one endpoint an agent token opens.
const agentTokenRoute = fiber.MethodPost + " /api/v2/sessions/:id/tool-calls"

// isAgentToken reports whether a Bearer credential is a JWS whose
// protected header names the agent-token algorithm and one of this
// service's agent-token keys (by kid): such a credential is verified here
// (agentverify), any other goes to the identity adapters. Only the header
// is decoded: every Keycloak token passes this way, and parsing the whole
// JWS (go-jose's ParseSignedCompact decodes the payload and signature too)
// was a fifth of a Bearer request's CPU time. A header read as ours before
// is not read again (agentHeaders).
func (s *Server) isAgentToken(cred ports.Credential) bool {
	if s.cfg.AgentTokens == nil || cred.Kind != ports.CredentialBearer || strings.Count(cred.Value, ".") != 2 {
		return false
	}
	protected, _, _ := strings.Cut(cred.Value, ".")
	keys := s.cfg.AgentTokens.Keys.JWKS().Keys
	kid, known := s.agentHeaders.kid(protected)
	if !known {
		if kid = agentKeyID(protected, keys); kid == "" {
			return false
		}
		s.agentHeaders.keep(protected, kid)
	}
	// The key named must be in the set now: keys rotate out.
	for _, k := range keys {
		if k.KeyID == kid {
			return true
		}
	}
	return false
}

// agentKeyID is the kid of a protected header (base64url) that names the
// agent-token algorithm and one of keys, else "".
func agentKeyID(protected string, keys []jose.JSONWebKey) string {
	raw, err := base64.RawURLEncoding.DecodeString(protected)
	if err != nil {
		return ""
	}
	// Our tokens name their kid as it is (we sign them, and the signature
	// covers the header): a header without one of our kids in it, every
	// Keycloak token's, needs no JSON parse.
	named := false
	for _, k := range keys {
		named = named || k.KeyID != "" && bytes.Contains(raw, []byte(k.KeyID))
	}
	if !named {
		return ""
	}
	// Read as go-jose reads a header: names as written, each once.
	var h struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if jsonv2.Unmarshal(raw, &h) != nil || h.Alg != string(agentverify.Algorithm) {
		return ""
	}
	for _, k := range keys {
		if h.Kid != "" && k.KeyID == h.Kid {
			return h.Kid
		}
	}
	return ""
}

// maxAgentHeaders bounds agentHeaders: the service signs with one header
// per key, so a few cover every token in use.
const maxAgentHeaders = 16

// agentHeaders remembers protected headers (base64url, as sent) read as
// an agent token's, with the kid each names: reading one was 3 % of a
// gateway call's CPU. What a header says never changes, so an entry is
// never stale; whether its key is still in force is asked on every use.
// Once maxAgentHeaders are kept nothing more is (made-up headers cannot
// grow it), and a header not kept is read each time. The zero value is
// empty.
type agentHeaders struct {
	kids sync.Map // header -> kid
	n    atomic.Int32
}

func (h *agentHeaders) kid(header string) (string, bool) {
	kid, ok := h.kids.Load(header)
	if !ok {
		return "", false
	}
	return kid.(string), true
}

func (h *agentHeaders) keep(header, kid string) {
	if h.n.Add(1) > maxAgentHeaders {
		h.n.Add(-1)
		return
	}
	if _, loaded := h.kids.LoadOrStore(strings.Clone(header), kid); loaded {
		h.n.Add(-1)
	}
}

// authenticateAgent accepts an agent token: valid, and naming a session
// and agent chain that still stand.
func (s *Server) authenticateAgent(c *fiber.Ctx, token string) error {
	caller, err := s.uc.AgentTokens.Authenticate(c.UserContext(), token)
	g := &caller.Grant
	st := stateOf(c)
	if g.Subject != "" {
		st.principal = domain.Principal{Subject: g.Subject, Method: domain.MethodAgentToken}
		st.intent.Subject, st.intent.AuthMethod = g.Subject, domain.MethodAgentToken
		note(c, "agent token: "+g.Describe())
	}
	if err != nil {
		refused(c)
		return err
	}
	st.agent, st.authenticated = g, true
	c.Locals(verifiedKey{}, &caller)
	return c.Next()
}

// verifiedKey is where authenticateAgent keeps the app.VerifiedAgent, so that
// the request's decision uses the session and agent it read.
type verifiedKey struct{}

// callerOf is the authenticated agent token of a request that has one.
func verifiedAgentOf(c *fiber.Ctx) app.VerifiedAgent {
	return *c.Locals(verifiedKey{}).(*app.VerifiedAgent)
}

// requireAgent lets an agent token through to the one endpoint it opens
// and refuses it everywhere else.
func (s *Server) requireAgent(c *fiber.Ctx, need domain.Permission) error {
	st := stateOf(c)
	if c.Method()+" "+c.Route().Path != agentTokenRoute {
		refused(c)
		return domain.RefuseToken(domain.ReasonAgentTokenRoute, domain.ErrForbidden,
			"an agent token opens POST /api/v2/sessions/{id}/tool-calls only; use the caller's own credential here")
	}
	st.decision, st.decided = domain.Decision{Allowed: true, Permission: need, Role: roleAgentToken}, true
	return c.Next()
}

// roleAgentToken names, in the audit reason, what granted an agent
// token's tool-call request.
const roleAgentToken domain.Role = "agent token"

// Token exchange (RFC 8693) at the token endpoint.
const (
	grantTokenExchange  = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccess     = "urn:ietf:params:oauth:token-type:access_token"
	tokenEndpoint       = "/oauth2/token"
	maxExchangeFormTool = 256
)

// tokenEndpoints registers the token endpoint: public in the sense that it
// takes no other credential, because the subject_token (the parent agent's
// token) is the credential; audited like every request.
func (s *Server) tokenEndpoints() {
	if s.cfg.AgentTokens == nil {
		return
	}
	s.app.Post(tokenEndpoint, s.public, s.exchangeToken)
}

// exchangeToken answers a token exchange with a token for a new sub-agent.
func (s *Server) exchangeToken(c *fiber.Ctx) error {
	err := s.exchangeLimit.allow(addressCaller(clientOf(c)))
	if err != nil {
		refused(c)
		return oauthRefuse(fiber.StatusTooManyRequests, oauthTemporarilyUnavailable, err)
	}
	form, err := oauthForm(c)
	if err != nil {
		refused(c)
		return err
	}
	req, issued, err := exchangeRequest(form)
	if err != nil {
		refused(c)
		return err
	}
	x, err := s.uc.AgentTokens.Exchange(c.UserContext(), req)
	if x.Parent.Subject != "" {
		// The audit record names whom the chain acts for.
		stateOf(c).principal = domain.Principal{Subject: x.Parent.Subject, Method: domain.MethodAgentToken}
	}
	if err != nil {
		if x.Parent.ID != "" {
			note(c, "agent token exchange refused; parent: "+x.Parent.Describe())
		}
		return exchangeRefused(c, err)
	}
	note(c, "agent token exchanged: "+x.Grant.Describe()+"; parent jti "+x.Parent.ID)
	return s.sendToken(c, x.Minted, issued)
}

// exchangeRequest reads an RFC 8693 request: the grant, the subject token
// and its type, what is asked for (audience, resource, scope) and the
// token type wanted (an access token, which is a JWT, by default).
func exchangeRequest(form url.Values) (app.ExchangeRequest, string, error) {
	if gt := form.Get("grant_type"); gt != grantTokenExchange {
		return app.ExchangeRequest{}, "", oauthRefuse(fiber.StatusBadRequest, oauthUnsupportedGrantType,
			domain.RefuseToken(domain.ReasonTokenGrantType, domain.ErrInvalidInput, "grant_type must be %s", grantTokenExchange))
	}
	if form.Get("subject_token") == "" {
		return app.ExchangeRequest{}, "", badOAuthRequest("subject_token is required")
	}
	if tt := form.Get("subject_token_type"); tt != tokenTypeAccess && tt != tokenTypeJWT {
		return app.ExchangeRequest{}, "", badOAuthRequest("subject_token_type must be %s or %s", tokenTypeAccess, tokenTypeJWT)
	}
	if form.Has("actor_token") || form.Has("actor_token_type") {
		return app.ExchangeRequest{}, "", badOAuthRequest("actor_token is not supported: the subject token's act chain names the actors")
	}
	issued := cmp.Or(form.Get("requested_token_type"), tokenTypeAccess)
	if issued != tokenTypeAccess && issued != tokenTypeJWT {
		return app.ExchangeRequest{}, "", badOAuthRequest("requested_token_type must be %s or %s", tokenTypeAccess, tokenTypeJWT)
	}
	req := app.ExchangeRequest{SubjectToken: form.Get("subject_token"), Audience: form.Get("audience"), Resource: form.Get("resource"), TTL: form.Get("ttl")}
	// The tools asked for: scope (RFC 8693 §2.1, space-separated) or tools.
	if scope := form.Get("scope") + " " + form.Get("tools"); strings.TrimSpace(scope) != "" {
		req.Tools = strings.FieldsFunc(scope, func(r rune) bool { return r == ' ' || r == ',' })
		if len(req.Tools) > maxExchangeFormTool {
			return app.ExchangeRequest{}, "", oauthRefuse(fiber.StatusBadRequest, oauthInvalidScope,
				fmt.Errorf("at most %d tools: %w", maxExchangeFormTool, domain.ErrInvalidInput))
		}
	}
	return req, issued, nil
}

// exchangeRefused names a refused exchange's OAuth error: the subject
// token's standing (invalid, expired, revoked, its session closed, no room
// for a sub-agent) is invalid_grant; the server named, invalid_target; the
// tools, invalid_scope; a malformed request, invalid_request. Anything
// else (the store failing) keeps its own status.
func exchangeRefused(c *fiber.Ctx, err error) error {
	code := ""
	var tr *domain.TokenRefusal
	switch {
	case errors.As(err, &tr) && (tr.Code == domain.ReasonTokenAudienceUnknown || tr.Code == domain.ReasonTokenTarget):
		code = oauthInvalidTarget
	case errors.As(err, &tr) && (tr.Code == domain.ReasonTokenWider || tr.Code == domain.ReasonTokenNoTools ||
		tr.Code == domain.ReasonTokenToolOutOfReach || tr.Code == domain.ReasonPolicyDeny):
		code = oauthInvalidScope
	case errors.Is(err, domain.ErrInvalidInput):
		code = oauthInvalidRequest
	case errors.Is(err, domain.ErrUnauthenticated) || errors.Is(err, domain.ErrForbidden) || errors.Is(err, domain.ErrNotFound) ||
		errors.Is(err, domain.ErrNotVisible) || errors.Is(err, domain.ErrConflict):
		code = oauthInvalidGrant
	default:
		return err
	}
	refused(c)
	return oauthRefuse(fiber.StatusBadRequest, code, err)
}

// sendToken answers a token: never cached (no-store is on every answer).
func (s *Server) sendToken(c *fiber.Ctx, m app.Minted, issued string) error {
	c.Set(fiber.HeaderPragma, "no-cache")
	return c.JSON(tokenResponse{AccessToken: m.Token, TokenType: "Bearer", ExpiresIn: int64(m.Grant.Expires.Sub(m.Grant.IssuedAt).Seconds()),
		Scope: strings.Join(m.Grant.Tools, " "), IssuedTokenType: issued})
}

func (s *Server) serveJWKS(c *fiber.Ctx) error { return c.JSON(s.cfg.AgentTokens.Keys.JWKS()) }

func (s *Server) serveMetadata(c *fiber.Ctx) error { return c.JSON(s.metadata()) }

// metadata is the RFC 8414 document of what exists, and only that: token
// exchange without client authentication (the subject token is the
// credential), introspection with the caller's Bearer credential (RFC 7662
// §2.1), no authorization endpoint (so no response type).
func (s *Server) metadata() map[string]any {
	iss := s.cfg.AgentTokens.Keys.Issuer()
	base := strings.TrimSuffix(iss, "/")
	return map[string]any{
		"issuer":                                iss,
		"jwks_uri":                              base + jwksPath,
		"token_endpoint":                        base + tokenEndpoint,
		"introspection_endpoint":                base + introspectionEndpoint,
		"grant_types_supported":                 []string{grantTokenExchange},
		"token_endpoint_auth_methods_supported": []string{"none"},
		"introspection_endpoint_auth_methods_supported": []string{"bearer"},
		"response_types_supported":                      []string{},
	}
}

// managementKeys adds the key set to the management listener's mux,
// without credential, for tool servers inside the cluster.
func (s *Server) managementKeys(mux *http.ServeMux) {
	if s.cfg.AgentTokens == nil {
		return
	}
	mux.HandleFunc("GET "+jwksPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.cfg.AgentTokens.Keys.JWKS())
	})
}

// introspectionEndpoint answers RFC 7662 introspection to holders of
// tokens:introspect (a tool server's own credential).
const introspectionEndpoint = "/oauth2/introspect"

// introspection is RFC 7662's answer; an inactive token has only Active.
type introspection struct {
	Active    bool               `json:"active"`
	Issuer    string             `json:"iss,omitempty"`
	Subject   string             `json:"sub,omitempty"`
	ClientID  string             `json:"client_id,omitempty"`
	Scope     string             `json:"scope,omitempty"`
	Audience  string             `json:"aud,omitempty"`
	Act       *agentverify.Actor `json:"act,omitempty"`
	Session   string             `json:"session_id,omitempty"`
	Mode      domain.SessionMode `json:"mode,omitempty"`
	Tools     []string           `json:"tools,omitempty"`
	Ask       []string           `json:"ask_tools,omitempty"`
	ID        string             `json:"jti,omitempty"`
	IssuedAt  int64              `json:"iat,omitempty"`
	Expires   int64              `json:"exp,omitempty"`
	TokenType string             `json:"token_type,omitempty"`
}

func (s *Server) introspect(c *fiber.Ctx) error {
	if err := s.introspectLimit.allow("sub:" + principalOf(c).Subject); err != nil {
		refused(c)
		return oauthRefuse(fiber.StatusTooManyRequests, oauthTemporarilyUnavailable, err)
	}
	form, err := oauthForm(c)
	if err != nil {
		return err
	}
	token := form.Get("token")
	if token == "" {
		return badOAuthRequest("token is required")
	}
	in, err := s.uc.AgentTokens.Introspect(c.UserContext(), token)
	if err != nil {
		return err
	}
	if !in.Active {
		msg := "token introspected: inactive (" + in.Reason + ")"
		if in.Grant.ID != "" {
			msg += "; " + in.Grant.Describe()
		}
		note(c, msg)
		return c.JSON(introspection{})
	}
	g := in.Grant
	note(c, "token introspected: active; "+g.Describe())
	return c.JSON(introspection{Active: true, Issuer: s.cfg.AgentTokens.Keys.Issuer(), Subject: g.Subject, ClientID: g.Agent(),
		Scope: strings.Join(g.Tools, " "), Audience: g.Audience,
		Act: agentverify.ActorChain(g.Chain), Session: g.Session, Mode: g.Mode, Tools: g.Tools, Ask: g.Ask, ID: g.ID,
		IssuedAt: g.IssuedAt.Unix(), Expires: g.Expires.Unix(), TokenType: "Bearer"})
}
