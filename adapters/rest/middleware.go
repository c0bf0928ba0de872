package rest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// HeaderRequestID carries the request id on every response.
const HeaderRequestID = "X-Request-ID"

// Security headers of every answer, built once.
var (
	headerCacheControl       = []byte(fiber.HeaderCacheControl)
	noStore                  = []byte("no-store")
	headerContentTypeOptions = []byte(fiber.HeaderXContentTypeOptions)
	noSniff                  = []byte("nosniff")
)

// securityHeaders marks an answer: it may hold one caller's data or an
// error about it, so no shared cache may keep it and no browser may
// reinterpret it (ASVS V3/V14).
func securityHeaders(c *fiber.Ctx) {
	c.Response().Header.SetCanonical(headerCacheControl, noStore)
	c.Response().Header.SetCanonical(headerContentTypeOptions, noSniff)
}

// SessionCookie is the cookie that carries an OIDC login session.
const SessionCookie = "user_session"

// reqState is everything the stages learn about one request. One value per
// request comes from a pool and is kept in Locals under stateKey, so the
// stages share it without allocating.
type reqState struct {
	id string
	// client is the client's address, behind trusted proxies (clientAddress).
	client netip.Addr
	// target is the request target (path and query, as sent) as every
	// record keeps it: credentials replaced (Config.Redactor).
	target    string
	principal domain.Principal
	// authenticated is set once the authenticate stage accepted a credential.
	authenticated bool
	// decided is set once the authorize stage ran; decision is its outcome.
	decided  bool
	decision domain.Decision
	// note is what the handler adds to the audit reason (a tool-call
	// decision, an approval, a login).
	note string
	// public marks an endpoint that needs no credential but is audited
	// (the login endpoints).
	public bool
	// refused: the request was answered, but what it asked for was refused.
	refused bool
	// agent is the grant of an agent token that authenticated the
	// request; nil for every other credential.
	agent *domain.AgentGrant
	// reason is the code of an error answer, for the access log (a
	// constant: reason_code of a 403, else the error code).
	reason string
	// logFields is the access log line's fields: pooled with the state, so
	// that writing the line allocates no slice.
	logFields [9]zap.Field
	// intent is what the stores write beside every change this request
	// makes (the audit outbox); the handlers' context points at it.
	intent domain.AuditIntent
	// keyOwnerChange names the change of the caller's managed keys its
	// roles made (a narrowing), for the audit record.
	keyOwnerChange string
}

type stateKey struct{}

var statePool = sync.Pool{New: func() any { return new(reqState) }}

func stateOf(c *fiber.Ctx) *reqState {
	if st, ok := c.Locals(stateKey{}).(*reqState); ok {
		return st
	}
	return &reqState{} // only for handlers tested without the chain
}

func requestID(c *fiber.Ctx) string { return stateOf(c).id }

// principalOf returns the authenticated caller.
func principalOf(c *fiber.Ctx) domain.Principal { return stateOf(c).principal }

// Incoming request ids: a caller's X-Request-ID is kept (and echoed) when it
// has 1 to maxRequestIDLen characters of A-Z, a-z, 0-9, '.', '_' and '-', so
// logs and audit records correlate with the caller's and a proxy's; any
// other value is replaced, so that no header can inject into a log line.
const maxRequestIDLen = 64

var headerRequestID = []byte(HeaderRequestID)

// incomingRequestID returns the caller's well-formed X-Request-ID, copied
// (the header's bytes are reused for the next request), or "".
func incomingRequestID(c *fiber.Ctx) string {
	v := c.Request().Header.PeekBytes(headerRequestID)
	if len(v) == 0 || len(v) > maxRequestIDLen {
		return ""
	}
	for _, b := range v {
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '.' || b == '_' || b == '-') {
			return ""
		}
	}
	return string(v)
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// withRequestID gives the request its id and state, and marks debug-mode
// responses.
func (s *Server) withRequestID(c *fiber.Ctx) error {
	st := statePool.Get().(*reqState)
	id := incomingRequestID(c)
	if id == "" {
		id = newRequestID()
	}
	*st = reqState{id: id, client: s.clientAddress(c), target: s.redactor.Redact(c.Request().Header.RequestURI())}
	c.Locals(stateKey{}, st)
	c.Set(HeaderRequestID, st.id)
	securityHeaders(c)
	if s.cfg.Debug {
		c.Set("X-Auth-Debug", "true")
	}
	err := checkFraming(&c.Request().Header)
	if err != nil {
		// Where the next request on this connection starts is unknown.
		c.Context().SetConnectionClose()
	} else {
		err = c.Next()
	}
	if err != nil {
		// Answer here, while the state is still ours to read.
		if herr := s.handleError(c, err); herr != nil {
			s.log.Error("write error response", zap.Error(herr))
		}
	}
	c.Locals(stateKey{}, nil)
	statePool.Put(st)
	return nil
}

// maxUserAgentLog bounds the user agent in the access log.
const maxUserAgentLog = 256

// accessLog writes one line per request: the request target as the audit
// record has it (credentials replaced), the reason code of an error answer,
// the client address (behind trusted proxies) and the user agent
// (truncated). It logs no credential, cookie or other header.
func (s *Server) accessLog(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	if err != nil {
		if herr := s.handleError(c, err); herr != nil {
			return herr
		}
	}
	st := stateOf(c)
	s.metrics.observe(c, st, start)
	// The user agent points into the request's buffer; zap encodes it
	// before this returns, so it is neither copied nor kept.
	ua := c.Get(fiber.HeaderUserAgent)
	if len(ua) > maxUserAgentLog {
		ua = ua[:maxUserAgentLog]
	}
	if ce := s.log.Check(zap.InfoLevel, "request"); ce != nil {
		st.logFields = [...]zap.Field{
			zap.String("request_id", st.id),
			zap.String("method", c.Method()),
			zap.String("path", st.target),
			zap.Int("status", c.Response().StatusCode()),
			zap.Duration("latency", time.Since(start)),
			zap.String("subject", st.principal.Subject),
			zap.Stringer("client", &st.client), // a pointer: no copy boxed
			zap.String("user_agent", ua),
			zap.String("reason", st.reason),
		}
		ce.Write(st.logFields[:]...)
	}
	return nil
}

// audit records the access decision of every request that reaches it and
// answers only after the record is committed. If the record cannot be
// committed the response becomes a 503: nothing is answered unaudited.
func (s *Server) audit(c *fiber.Ctx) error {
	st := stateOf(c)
	// The request target as sent (path and query), credentials replaced by
	// their markers: the store seals it (escaped, bounded), so any other
	// bytes are recorded faithfully, and the chain's hash covers it.
	st.intent = domain.AuditIntent{RequestID: st.id, Client: clientOf(c).String(), Method: c.Method(), Path: st.target}
	c.SetUserContext(ports.WithAuditIntent(c.UserContext(), &st.intent))
	err := c.Next()
	reason := ""
	if err != nil {
		reason = err.Error()
		if herr := s.handleError(c, err); herr != nil {
			return herr
		}
	}
	rec := domain.AuditRecord{
		Time:       time.Now(),
		RequestID:  st.id,
		Subject:    st.principal.Subject,
		Roles:      st.principal.Roles,
		AuthMethod: st.principal.Method,
		Method:     c.Method(),
		Path:       st.intent.Path,
		Client:     st.intent.Client,
		IntentKey:  st.intent.Key,
		Decision:   domain.AuditDeny,
		Status:     c.Response().StatusCode(),
	}
	switch {
	case st.public && err == nil:
		rec.Decision, rec.Reason = domain.AuditAllow, "public endpoint"
	case st.public:
		rec.Reason = reason
	case st.decided && st.decision.Allowed && errors.Is(err, domain.ErrForbidden):
		// The role allowed the route, the resource did not: a denial.
		rec.Reason = st.decision.Reason() + "; then: " + reason
	case st.decided && st.decision.Allowed && errors.Is(err, domain.ErrNotVisible):
		// Answered 404 so that its existence does not leak, but refused.
		rec.Reason = st.decision.Reason() + "; then: " + reason + " (exists but is not visible to the caller)"
	case st.decided && st.decision.Allowed && err == nil:
		rec.Decision, rec.Reason = domain.AuditAllow, st.decision.Reason()
	case st.decided && st.decision.Allowed:
		rec.Decision, rec.Reason = domain.AuditAllow, st.decision.Reason()+"; then: "+reason
	case reason != "":
		rec.Reason = reason
	case !st.decided:
		rec.Reason = "no route matches " + c.Method() + " " + c.Path()
	}
	if st.note != "" {
		rec.Reason += "; " + st.note
	}
	if st.keyOwnerChange != "" {
		rec.Reason += "; " + st.keyOwnerChange
	}
	if st.refused {
		rec.Decision = domain.AuditDeny
	}
	if aerr := s.auditLog.Record(c.UserContext(), rec); aerr != nil {
		s.log.Error("audit record not committed; answering 503", zap.String("request_id", st.id), zap.Error(aerr))
		c.Response().ResetBody()
		return fmt.Errorf("audit log: %w", errors.Join(aerr, domain.ErrUnavailable))
	}
	return nil
}

// public marks the request as one to a public, audited endpoint.
func (s *Server) public(c *fiber.Ctx) error {
	stateOf(c).public = true
	return c.Next()
}

// underBasePath serves the routes under s.cfg.BasePath: /agentauth/x is
// routed as /x (so access rules, audit paths and the CSRF check see the
// service's own paths), a Location the service answers with a path of its
// own (/x: after login, a created resource) gets the prefix back, and
// anything outside the prefix is 404.
func (s *Server) underBasePath(c *fiber.Ctx) error {
	p, bp := c.Path(), s.cfg.BasePath
	switch {
	case p == bp:
		c.Path("/")
	case strings.HasPrefix(p, bp+"/"):
		c.Path(p[len(bp):])
	default:
		return fmt.Errorf("not found: this service is served under %s: %w", bp, domain.ErrNotFound)
	}
	err := c.Next()
	if loc := c.Response().Header.Peek(fiber.HeaderLocation); len(loc) > 0 && loc[0] == '/' && (len(loc) == 1 || loc[1] != '/' && loc[1] != '\\') {
		c.Response().Header.Set(fiber.HeaderLocation, bp+string(loc))
	}
	return err
}

// recoverPanic turns a panic into a 500 error so the audit stage sees it.
func (s *Server) recoverPanic(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("handler panicked", zap.String("request_id", requestID(c)), zap.Any("panic", r), zap.Stack("stack"))
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return c.Next()
}

// credentialFrom reads the Bearer token, or else the session cookie
// (RFC 6750 §2.1): one Authorization header, the scheme, one or more ASCII
// spaces or tabs, a b64token. Two headers or a credential of other
// characters is a malformed request (errMalformedAuthorization); another
// scheme, no scheme or no credential after it is a credential present but
// unusable: 401, with a message saying which (errNoBearerScheme,
// errOtherScheme, errNoBearerCredential).
func credentialFrom(c *fiber.Ctx) (ports.Credential, error) {
	if n := len(c.Request().Header.PeekAll(fiber.HeaderAuthorization)); n > 1 {
		return ports.Credential{}, fmt.Errorf("%d Authorization headers: %w", n, errMalformedAuthorization)
	}
	if h := c.Get(fiber.HeaderAuthorization); h != "" {
		i := strings.IndexAny(h, " \t")
		switch {
		case i < 0 && strings.EqualFold(h, "Bearer"):
			return ports.Credential{}, fmt.Errorf("%w: %w", domain.ErrUnauthenticated, errNoBearerCredential)
		case i < 0:
			return ports.Credential{}, fmt.Errorf("%w: %w", domain.ErrUnauthenticated, errNoBearerScheme)
		case !strings.EqualFold(h[:i], "Bearer"):
			return ports.Credential{}, fmt.Errorf("%w: %w", domain.ErrUnauthenticated, errOtherScheme)
		}
		v := strings.Trim(h[i:], " \t")
		if v == "" {
			return ports.Credential{}, fmt.Errorf("%w: %w", domain.ErrUnauthenticated, errNoBearerCredential)
		}
		if !domain.IsBearerToken(v) {
			return ports.Credential{}, fmt.Errorf("the Bearer credential has characters outside RFC 6750's b64token syntax: %w", errMalformedAuthorization)
		}
		return ports.Credential{Kind: ports.CredentialBearer, Value: v}, nil
	}
	if v := c.Cookies(SessionCookie); v != "" {
		return ports.Credential{Kind: ports.CredentialCookie, Value: v}, nil
	}
	return ports.Credential{}, nil
}

// authenticate resolves the caller or stops the request with 401 (503 when
// the identity source cannot answer).
func (s *Server) authenticate(c *fiber.Ctx) error {
	cred, err := credentialFrom(c)
	if err != nil {
		return err
	}
	switch {
	case cred.Kind == ports.CredentialNone:
		return fmt.Errorf("%w: %w", domain.ErrUnauthenticated, errMissingCredential)
	}
	if s.isAgentToken(cred) {
		return s.authenticateAgent(c, cred.Value)
	}
	if s.isManagedKey(cred) {
		return s.authenticateKey(c, cred.Value)
	}
	p, err := s.authn.Authenticate(c.UserContext(), cred)
	if err != nil {
		return err
	}
	if p.Method == domain.MethodDebug {
		if !s.loopbackOnly.Load() {
			s.log.Error("refused a debug principal on a non-loopback address; the identity source (a hybrid centre?) runs in debug mode",
				zap.String("request_id", stateOf(c).id), zap.String("listen", s.cfg.Addr))
			return errDebugOffLoopback
		}
		c.Set("X-Auth-Debug", "true")
	}
	if cred.Kind == ports.CredentialCookie && s.cfg.Login == nil {
		// OIDC mode checks cookie requests in Login.csrf; elsewhere (hybrid
		// mode forwards the centre's cookie) the check is made here, once
		// the cookie is known to be a credential (an unknown one stays 401).
		if err := sameOriginCookieRequest(c); err != nil {
			return err
		}
	}
	st := stateOf(c)
	st.principal, st.authenticated = p, true
	st.intent.Subject, st.intent.Roles, st.intent.AuthMethod = p.Subject, p.Roles, p.Method
	if err := s.observeOwner(c, p); err != nil {
		return err
	}
	return c.Next()
}

// require authorizes the route's permission for the caller's roles.
func (s *Server) require(need domain.Permission) fiber.Handler {
	return func(c *fiber.Ctx) error {
		st := stateOf(c)
		if st.agent != nil {
			return s.requireAgent(c, need)
		}
		st.decision = s.authz.Allow(st.principal, need)
		st.decided = true
		if !st.decision.Allowed {
			return &domain.AccessDenied{Decision: st.decision}
		}
		return c.Next()
	}
}

// sameOriginCookieRequest refuses an unsafe request carrying the session
// cookie that a browser sent from another site (CSRF), by crossSite with
// the host the request was sent to as the origin.
func sameOriginCookieRequest(c *fiber.Ctx) error {
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return nil
	}
	return crossSite(c, "")
}

// crossSite is the one CSRF rule of the service, for the API, the login
// endpoints and the console's forms alike: Sec-Fetch-Site must be
// same-origin or none, else an Origin header must be origin (empty: name
// the host the request was sent to). Requests without either header are
// not from a modern browser and pass; SameSite=Lax keeps the cookie off
// cross-site POSTs of old ones.
func crossSite(c *fiber.Ctx, origin string) error {
	if site := c.Get("Sec-Fetch-Site"); site != "" {
		if site == "same-origin" || site == "none" {
			return nil
		}
		return fmt.Errorf("cross-site request refused (Sec-Fetch-Site: %s): %w", site, domain.ErrForbidden)
	}
	got := c.Get(fiber.HeaderOrigin)
	if got == "" {
		return nil
	}
	if origin != "" {
		if got != origin {
			return fmt.Errorf("cross-origin request refused (Origin is not %s): %w", origin, domain.ErrForbidden)
		}
		return nil
	}
	u, err := url.Parse(got)
	if err != nil || u.Host == "" || !strings.EqualFold(u.Host, string(c.Request().Host())) {
		return fmt.Errorf("cross-origin request refused (Origin is not this host): %w", domain.ErrForbidden)
	}
	return nil
}
