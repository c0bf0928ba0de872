package rest

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/telemetry"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
)

// HealthChecker reports readiness per part ("ok" or what is wrong).
type HealthChecker interface {
	Checks() map[string]string
}

// LoginConfig is what the login endpoints need to know.
type LoginConfig struct {
	// RedirectURI is the OIDC callback URL; its origin is the service's
	// public origin (CSRF checks) and its scheme decides the cookie's
	// Secure attribute.
	RedirectURI string
	// BasePath scopes the session cookie (server.basePath); empty: the
	// root. (Redirects are prefixed by the server, see underBasePath.)
	BasePath string
}

// Login serves the sign-in endpoints: in OIDC mode the provider's (code
// flow, password, back-channel logout), in local, API-key and debug modes
// the API-key sign-in; sign-out in both. New joins it to the
// Application's Login use case.
type Login struct {
	uc     *app.Login
	health HealthChecker
	// origin is the service's public origin, which Origin headers must
	// name; zero: the host the request was sent to (key sign-in, where
	// no redirect URI says what the public origin is).
	origin webOrigin
	secure bool
	// callbackPath is the path of the redirect URI, where the cookie that
	// binds a login's state to the browser is sent.
	callbackPath string
	basePath     string
	log          *zap.Logger
}

// NewLogin builds the login endpoints.
func NewLogin(cfg LoginConfig, health HealthChecker, log *zap.Logger) (*Login, error) {
	u, err := url.Parse(cfg.RedirectURI)
	origin, ok := publicOrigin(cfg.RedirectURI)
	if err != nil || !ok {
		return nil, fmt.Errorf("rest: redirect URI %q is not an absolute URL: %w", cfg.RedirectURI, domain.ErrInvalidInput)
	}
	// Secure everywhere but plain-http loopback, where browsers would drop
	// a Secure cookie.
	secure := u.Scheme != "http" || !isLoopbackHost(u.Hostname())
	callbackPath := u.EscapedPath()
	if callbackPath == "" {
		callbackPath = "/"
	}
	return &Login{health: health, origin: origin, secure: secure, callbackPath: callbackPath, basePath: cfg.BasePath, log: log.Named("login")}, nil
}

// KeyLoginConfig is what the key sign-in endpoints need to know.
type KeyLoginConfig struct {
	// Secure sets the cookie's Secure attribute: everywhere but on a
	// loopback listen address served over plain HTTP.
	Secure   bool
	BasePath string
}

// NewKeyLogin builds the sign-in endpoints of local, API-key and debug
// modes, where a browser exchanges an API key for a session cookie.
func NewKeyLogin(cfg KeyLoginConfig, log *zap.Logger) *Login {
	return &Login{secure: cfg.Secure, basePath: cfg.BasePath, log: log.Named("login")}
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// loginRoutes registers the public sign-in endpoints and the CSRF check,
// ahead of authentication. It does nothing without cookie sessions.
func (s *Server) loginRoutes() {
	l := s.cfg.Login
	if l == nil {
		return
	}
	s.app.Use(l.csrf)
	if l.uc.ProviderEnabled() {
		s.app.Get("/auth/login", s.public, l.begin)
		s.app.Get("/auth/callback", s.public, l.callback)
		s.app.Post("/auth/login", s.public, l.passwordLogin)
		s.app.Post("/auth/backchannel-logout", s.public, l.backchannelLogout)
	}
	if l.uc.KeySignInEnabled() {
		s.app.Post("/auth/key", s.public, l.keyLogin)
	}
	s.app.Post("/auth/logout", s.public, l.logout)
}

// healthRoutes registers GET /health (see health). It makes no access
// decision and is not audited.
func (s *Server) healthRoutes() {
	s.app.Get("/health", s.health)
}

// loggedIn records who logged in, for the audit record of the request.
func loggedIn(c *fiber.Ctx, res app.LoginResult) {
	st := stateOf(c)
	st.principal = res.Principal
	st.note = "login session started"
}

// csrf refuses cross-site unsafe requests that a browser would send with
// the user_session cookie (crossSite): with a cookie and no Authorization
// header, a POST, PUT, PATCH or DELETE (an API call or a console form)
// must come from our own origin. The sign-in forms are checked too (login
// CSRF).
func (l *Login) csrf(c *fiber.Ctx) error {
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return c.Next()
	}
	// Fiber routes case-insensitively and ignores a trailing slash: every
	// spelling that reaches a sign-in is a sign-in.
	p := strings.TrimRight(c.Path(), "/")
	isLogin := strings.EqualFold(p, "/auth/login") || strings.EqualFold(p, "/auth/key")
	if !isLogin && (c.Cookies(SessionCookie) == "" || c.Get(fiber.HeaderAuthorization) != "") {
		return c.Next()
	}
	if err := crossSite(c, l.origin); err != nil {
		return err
	}
	return c.Next()
}

// begin redirects to the provider's authorization endpoint.
func (l *Login) begin(c *fiber.Ctx) error {
	target, err := l.uc.Begin(c.UserContext(), c.Query("return_to"))
	if err != nil {
		return err
	}
	u, err := url.Parse(target)
	state := ""
	if err == nil {
		state = u.Query().Get("state")
	}
	if state == "" {
		return fmt.Errorf("rest: the authorization URL carries no state")
	}
	// The state is kept server-side; this cookie binds it to the browser
	// that started the login, so a callback URL of someone else's login is
	// refused here (login CSRF).
	c.Cookie(&fiber.Cookie{
		Name:     stateCookieName(state),
		Value:    state,
		Path:     l.callbackPath,
		MaxAge:   int(loginStateTTL / time.Second),
		Secure:   l.secure,
		HTTPOnly: true,
		SameSite: fiber.CookieSameSiteLaxMode,
	})
	return c.Redirect(target, fiber.StatusFound)
}

// loginStateTTL is how long the state cookie lives: the time the app
// allows between GET /auth/login and the callback.
const loginStateTTL = 10 * time.Minute

// stateCookieName names the cookie of one login by a digest of its state,
// so logins started in several tabs do not overwrite each other.
func stateCookieName(state string) string {
	return "login_state_" + app.Digest(state)[:16]
}

// stateBound reports whether the browser carries the cookie that GET
// /auth/login set for state, and clears it (it is single use).
func (l *Login) stateBound(c *fiber.Ctx, state string) bool {
	if state == "" {
		return false
	}
	name := stateCookieName(state)
	got := c.Cookies(name)
	if got == "" {
		return false
	}
	c.Cookie(&fiber.Cookie{Name: name, Value: "", Path: l.callbackPath, Expires: time.Unix(0, 0), MaxAge: -1,
		Secure: l.secure, HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode})
	return subtle.ConstantTimeCompare([]byte(got), []byte(state)) == 1
}

// callback completes the code flow, sets the cookie and redirects.
func (l *Login) callback(c *fiber.Ctx) error {
	if state := c.Query("state"); state != "" && !l.stateBound(c, state) {
		err := fmt.Errorf("login callback: this browser did not start the login of this state: %w", domain.ErrUnauthenticated)
		telemetry.LoginAttempted(telemetry.LoginCode, err)
		return err
	}
	res, err := l.uc.Callback(c.UserContext(), c.Query("state"), c.Query("code"), c.Query("error"))
	telemetry.LoginAttempted(telemetry.LoginCode, err)
	if err != nil {
		return err
	}
	l.setCookie(c, res)
	loggedIn(c, res)
	return c.Redirect(res.ReturnTo, fiber.StatusFound)
}

type passwordLoginRequest struct {
	Username string `json:"username" form:"username"`
	Password string `json:"password" form:"password"`
}

type loginResponse struct {
	Subject    string        `json:"subject"`
	Username   string        `json:"username,omitempty"`
	Roles      []domain.Role `json:"roles"`
	RoleSource string        `json:"role_source"`
	ExpiresAt  time.Time     `json:"expires_at"`
}

// passwordLogin is POST /auth/login with username and password as JSON or
// form fields.
func (l *Login) passwordLogin(c *fiber.Ctx) error {
	var req passwordLoginRequest
	switch ct := string(c.Request().Header.ContentType()); {
	case strings.HasPrefix(ct, fiber.MIMEApplicationJSON):
		if err := decodeJSON(c, &req); err != nil {
			return err
		}
	case strings.HasPrefix(ct, fiber.MIMEApplicationForm), strings.HasPrefix(ct, fiber.MIMEMultipartForm):
		req.Username, req.Password = c.FormValue("username"), c.FormValue("password")
	default:
		return fmt.Errorf("send username and password as application/json or application/x-www-form-urlencoded: %w", domain.ErrInvalidInput)
	}
	stateOf(c).note = "username " + strconv.Quote(truncate(req.Username, 128))
	res, err := l.uc.PasswordLogin(c.UserContext(), req.Username, req.Password, clientOf(c).String())
	telemetry.LoginAttempted(telemetry.LoginPassword, err)
	if err != nil {
		return withRetryAfter(c, err)
	}
	l.setCookie(c, res)
	loggedIn(c, res)
	if wantsRedirect(c) {
		return c.Redirect(returnTo(c), fiber.StatusSeeOther)
	}
	return c.JSON(loginResponse{
		Subject:    res.Principal.Subject,
		Username:   res.Session.Tokens.Username,
		Roles:      res.Principal.Roles,
		RoleSource: res.Principal.RoleSource,
		ExpiresAt:  res.Session.ExpiresAt,
	})
}

// withRetryAfter tells a caller held back by the login limits when to try
// again (Retry-After, whole seconds rounded up) and returns err.
func withRetryAfter(c *fiber.Ctx, err error) error {
	var ra *app.RetryAfter
	if errors.As(err, &ra) {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int((ra.Wait+time.Second-1)/time.Second)))
	}
	return err
}

// wantsRedirect reports whether a sign-in or sign-out was posted by a
// browser's form, to be answered with a redirect (POST-redirect-GET)
// rather than JSON.
func wantsRedirect(c *fiber.Ctx) bool {
	return c.Accepts(fiber.MIMEApplicationJSON, fiber.MIMETextHTML) == fiber.MIMETextHTML &&
		!strings.HasPrefix(string(c.Request().Header.ContentType()), fiber.MIMEApplicationJSON)
}

type keyLoginRequest struct {
	Key string `json:"key"`
}

// keyLogin is POST /auth/key with the API key as the form field key (or
// JSON {"key": …}): the key is checked like a Bearer credential and
// exchanged for a user_session cookie session, so the browser never keeps
// the key. A form post is answered with a redirect to return_to.
func (l *Login) keyLogin(c *fiber.Ctx) error {
	var req keyLoginRequest
	switch ct := string(c.Request().Header.ContentType()); {
	case strings.HasPrefix(ct, fiber.MIMEApplicationJSON):
		if err := decodeJSON(c, &req); err != nil {
			return err
		}
	case strings.HasPrefix(ct, fiber.MIMEApplicationForm), strings.HasPrefix(ct, fiber.MIMEMultipartForm):
		req.Key = c.FormValue("key")
	default:
		return fmt.Errorf("send the key as the form field key or as application/json: %w", domain.ErrInvalidInput)
	}
	stateOf(c).note = "key sign-in"
	res, err := l.uc.KeyLogin(c.UserContext(), strings.TrimSpace(req.Key), clientOf(c).String())
	if err != nil {
		return withRetryAfter(c, err)
	}
	l.setCookie(c, res)
	loggedIn(c, res)
	if wantsRedirect(c) {
		return c.Redirect(returnTo(c), fiber.StatusSeeOther)
	}
	return c.JSON(loginResponse{Subject: res.Principal.Subject, Roles: res.Principal.Roles, RoleSource: res.Principal.RoleSource,
		ExpiresAt: res.Session.ExpiresAt})
}

type logoutResponse struct {
	LoggedOut bool `json:"logged_out"`
	// EndSessionURL is where a browser should go to end its provider
	// session too; empty when the provider has none.
	EndSessionURL string `json:"end_session_url,omitempty"`
}

// logout ends the session here and at the provider and clears the cookie.
func (l *Login) logout(c *fiber.Ctx) error {
	cookie := c.Cookies(SessionCookie)
	if cookie == "" {
		return fmt.Errorf("%w: %w", domain.ErrUnauthenticated, errMissingCredential)
	}
	endURL, providerErr, err := l.uc.Logout(c.UserContext(), cookie)
	l.clearCookie(c)
	if err != nil {
		return err
	}
	if providerErr != nil {
		// The session is gone here; the provider may keep its own.
		l.log.Warn("provider logout failed; local session ended", zap.String("request_id", requestID(c)), zap.Error(providerErr))
	}
	if wantsRedirect(c) {
		// The provider's session was ended from here (its logout endpoint);
		// the browser lands on the sign-in page.
		return c.Redirect("/?signed_out=1", fiber.StatusSeeOther)
	}
	return c.JSON(logoutResponse{LoggedOut: true, EndSessionURL: endURL})
}

type backchannelLogoutResponse struct {
	SessionsEnded int `json:"sessions_ended"`
}

// backchannelLogout is POST /auth/backchannel-logout (OpenID Connect
// Back-Channel Logout 1.0): the provider posts a logout token as the form
// field logout_token. The token is the credential: no cookie, no other
// authentication. Accepted: 200; refused: 400 with the reason; either way
// no-store and an audit record saying what happened.
func (l *Login) backchannelLogout(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	st := stateOf(c)
	if !strings.HasPrefix(string(c.Request().Header.ContentType()), fiber.MIMEApplicationForm) {
		st.note = "back-channel logout refused: not a form"
		return fmt.Errorf("send logout_token as application/x-www-form-urlencoded: %w", domain.ErrInvalidInput)
	}
	n, err := l.uc.BackchannelLogout(c.UserContext(), c.FormValue("logout_token"))
	if err != nil {
		st.note = "back-channel logout refused"
		return err
	}
	st.note = fmt.Sprintf("back-channel logout: %d login sessions ended", n)
	return c.JSON(backchannelLogoutResponse{SessionsEnded: n})
}

// cookiePath scopes the session cookie to the base path.
func (l *Login) cookiePath() string {
	if l.basePath == "" {
		return "/"
	}
	return l.basePath
}

func (l *Login) setCookie(c *fiber.Ctx, res app.LoginResult) {
	c.Cookie(&fiber.Cookie{
		Name:     SessionCookie,
		Value:    res.Cookie,
		Path:     l.cookiePath(),
		Expires:  res.Session.ExpiresAt,
		Secure:   l.secure,
		HTTPOnly: true,
		SameSite: fiber.CookieSameSiteLaxMode,
	})
}

func (l *Login) clearCookie(c *fiber.Ctx) {
	c.Cookie(&fiber.Cookie{
		Name:     SessionCookie,
		Value:    "",
		Path:     l.cookiePath(),
		Expires:  time.Unix(0, 0),
		MaxAge:   -1,
		Secure:   l.secure,
		HTTPOnly: true,
		SameSite: fiber.CookieSameSiteLaxMode,
	})
}

// truncate cuts a caller-chosen value to at most n bytes before it is kept
// in the audit log.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
