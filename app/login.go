package app

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// LoginConfig is the login use case's policy (auth.oidc.*).
type LoginConfig struct {
	// PasswordLogin switches POST /auth/login on.
	PasswordLogin bool
	// SessionIdle ends a session unused this long; SessionMax ends any
	// session this long after login.
	SessionIdle time.Duration
	SessionMax  time.Duration
	// RefreshBefore: refresh when the access token expires within it.
	RefreshBefore time.Duration
	// LoginFailures failed password logins per username and client address
	// within LoginWindow are answered 429; see UserCeiling and AddressLimit
	// for the wider limits.
	LoginFailures int
	LoginWindow   time.Duration
	// TokenKey (32 bytes) seals the provider's tokens in the session store
	// with AES-256-GCM; nil stores them unsealed (tests, key sessions).
	TokenKey []byte
	// Method is what the principals of these sessions authenticated with:
	// empty means domain.MethodOIDC; key sessions carry their mode's
	// (debug sessions must stay debug principals, served on loopback only).
	Method domain.AuthMethod
}

// Password-login limits, as multiples of LoginConfig.LoginFailures (L)
// failures within LoginWindow: L per username from one client address;
// UserCeiling×L per username from all addresses together, so a stranger
// at one address cannot lock a user out of logins from elsewhere;
// AddressLimit×L per client address over all usernames (password
// spraying), which with server.trustedProxies is one client, not everyone
// behind the ingress.
const (
	UserCeiling  = 20
	AddressLimit = 10
)

// authRequestTTL bounds the time between GET /auth/login and the callback.
const authRequestTTL = 10 * time.Minute

// touchEvery limits how often a session's last use is written: once a
// minute is precise enough for an idle limit counted in minutes or hours.
const touchEvery = time.Minute

// Login is the use case of OIDC logins and the server-side sessions behind
// the user_session cookie.
type Login struct {
	// idp is nil for key sessions (local, API-key and debug modes): there
	// is no provider to refresh at or log out of.
	idp ports.IdentityProvider
	// keys checks the API keys exchanged for key sessions; nil in OIDC mode.
	keys     ports.Authenticator
	sessions ports.LoginSessionStore
	requests ports.AuthRequestStore
	throttle ports.LoginThrottle
	clock    ports.Clock
	cfg      LoginConfig

	// memory serves cookie sessions after their first use; nil: every
	// request reads the store (see KeepSessionsInMemory). watch is what
	// keeps it current.
	memory *sessionMemory
	watch  ports.LoginSessionWatcher
	// managedKeys, when set, are the managed keys whose owners a
	// back-channel logout suspends.
	managedKeys *APIKeys
}

// SuspendKeysOnLogout makes a back-channel logout naming a subject suspend
// that subject's managed keys too (until it signs in again): the provider
// logging a person out everywhere is how a deprovisioned person shows.
func (l *Login) SuspendKeysOnLogout(k *APIKeys) { l.managedKeys = k }

// NewLogin wires the use case. A TokenKey that is not an AES-256 key is
// an error.
func NewLogin(cfg LoginConfig, idp ports.IdentityProvider, sessions ports.LoginSessionStore, requests ports.AuthRequestStore,
	throttle ports.LoginThrottle, clock ports.Clock) (*Login, error) {
	if cfg.TokenKey != nil {
		if len(cfg.TokenKey) != 32 {
			return nil, fmt.Errorf("login session key: want 32 bytes, got %d: %w", len(cfg.TokenKey), domain.ErrInvalidInput)
		}
		sealed, err := newSealedSessions(sessions, cfg.TokenKey)
		if err != nil {
			return nil, err
		}
		sessions = sealed
	}
	if cfg.Method == "" {
		cfg.Method = domain.MethodOIDC
	}
	return &Login{idp: idp, sessions: sessions, requests: requests, throttle: throttle, clock: clock, cfg: cfg}, nil
}

// NewKeyLogin is the login use case of local, API-key and debug modes: a
// browser exchanges an API key, checked by keys, for a user_session cookie
// session (the same sessions, store and limits as OIDC logins), so the key
// itself never stays in the browser. cfg.Method names the mode's method.
func NewKeyLogin(cfg LoginConfig, keys ports.Authenticator, sessions ports.LoginSessionStore, throttle ports.LoginThrottle,
	clock ports.Clock) (*Login, error) {
	if keys == nil || cfg.Method == "" || cfg.Method == domain.MethodOIDC {
		return nil, fmt.Errorf("key login needs a key authenticator and its mode's method: %w", domain.ErrInvalidInput)
	}
	l, err := NewLogin(cfg, nil, sessions, nil, throttle, clock)
	if err != nil {
		return nil, err
	}
	l.keys = keys
	return l, nil
}

// KeySignInEnabled reports whether KeyLogin is served.
func (l *Login) KeySignInEnabled() bool { return l.keys != nil }

// ProviderEnabled reports whether logins go through an identity provider
// (code flow, password login, back-channel logout).
func (l *Login) ProviderEnabled() bool { return l.idp != nil }

// maxKey bounds a key sent to KeyLogin.
const maxKey = 1024

// KeyLogin exchanges an API key for a login session. Failed attempts per
// client address are limited like password logins (AddressLimit × the
// login failures per window); the one answer to a wrong key is
// ErrBadKey, whatever the cause.
func (l *Login) KeyLogin(ctx context.Context, key, clientAddr string) (LoginResult, error) {
	if l.keys == nil {
		return LoginResult{}, fmt.Errorf("key sign-in is served in local, API-key and debug modes only: %w", domain.ErrNotFound)
	}
	if key == "" || len(key) > maxKey || !domain.IsBearerToken(key) {
		return LoginResult{}, ErrBadKey
	}
	limits := []ports.LoginLimit{{Key: "key-addr:" + clientAddr, Limit: AddressLimit * l.cfg.LoginFailures}}
	now := l.clock.Now()
	if l.cfg.LoginFailures > 0 {
		res, err := l.throttle.ReserveLoginAttempt(ctx, limits, now, now.Add(-l.cfg.LoginWindow))
		if err != nil {
			return LoginResult{}, err
		}
		if !res.OK {
			return LoginResult{}, &RetryAfter{Wait: max(res.Oldest.Add(l.cfg.LoginWindow).Sub(now), time.Second)}
		}
	}
	p, err := l.keys.Authenticate(ctx, ports.Credential{Kind: ports.CredentialBearer, Value: key})
	if errors.Is(err, domain.ErrUnauthenticated) {
		return LoginResult{}, ErrBadKey // the recorded attempt stays: a failure
	}
	if l.cfg.LoginFailures > 0 {
		if rerr := l.throttle.ReleaseLoginAttempt(context.WithoutCancel(ctx), []string{limits[0].Key}, now); rerr != nil && err == nil {
			err = rerr
		}
	}
	if err != nil {
		return LoginResult{}, err
	}
	// No provider tokens: the session lives until its absolute end (or
	// goes idle) and is never refreshed.
	return l.start(ctx, ports.TokenSet{
		Subject:      p.Subject,
		Roles:        domain.RoleExtraction{Roles: p.Roles, Source: p.RoleSource},
		AccessExpiry: now.Add(l.cfg.SessionMax),
	}, "")
}

// LoginResult is a successful login: the cookie value to set (a secret),
// the session and where the browser goes next.
type LoginResult struct {
	Cookie    string
	Session   ports.LoginSession
	Principal domain.Principal
	ReturnTo  string
}

// RetryAfter is a 429: wait Wait before trying again.
type RetryAfter struct{ Wait time.Duration }

func (e *RetryAfter) Error() string {
	return fmt.Sprintf("too many failed logins; retry in %s", e.Wait.Round(time.Second))
}

// Is makes errors.Is(err, domain.ErrTooManyRequests) hold.
func (e *RetryAfter) Is(target error) bool { return target == domain.ErrTooManyRequests }

// ErrBadKey is the one answer to a failed key sign-in.
var ErrBadKey = fmt.Errorf("this key is not valid here: %w", domain.ErrUnauthenticated)

// ErrBadCredentials is the one answer to a failed password login, whatever
// the cause (unknown user, wrong password, disabled account).
var ErrBadCredentials = fmt.Errorf("invalid username or password: %w", domain.ErrUnauthenticated)

// Ready fails with domain.ErrUnavailable until the provider is discovered.
func (l *Login) Ready() error {
	if l.idp == nil {
		return nil
	}
	return l.idp.Ready()
}

// PasswordLoginEnabled reports whether POST /auth/login is on.
func (l *Login) PasswordLoginEnabled() bool { return l.cfg.PasswordLogin }

// Begin starts a code-flow login and returns the provider URL to redirect
// to. returnTo must be a same-origin relative path ("" means "/").
func (l *Login) Begin(ctx context.Context, returnTo string) (string, error) {
	if err := l.idp.Ready(); err != nil {
		return "", err
	}
	if returnTo == "" {
		returnTo = "/"
	}
	if !SafeReturnTo(returnTo) {
		return "", fmt.Errorf("return_to must be a relative path on this site, such as /sessions: %w", domain.ErrInvalidInput)
	}
	req := ports.AuthRequest{State: randomToken(), Nonce: randomToken(), CodeVerifier: randomToken()}
	pending := ports.PendingAuthRequest{
		StateHash: Digest(req.State),
		Request:   ports.AuthRequest{Nonce: req.Nonce, CodeVerifier: req.CodeVerifier},
		ReturnTo:  returnTo,
		ExpiresAt: l.clock.Now().Add(authRequestTTL),
	}
	u, err := l.idp.AuthCodeURL(req)
	if err != nil {
		return "", err
	}
	if err := l.requests.PutAuthRequest(ctx, pending); err != nil {
		return "", err
	}
	return u, nil
}

// SafeReturnTo accepts only paths on this origin: "/x" but not "//host",
// "/\host", "https://host" or anything with control characters.
func SafeReturnTo(p string) bool {
	if len(p) == 0 || len(p) > 2048 || p[0] != '/' {
		return false
	}
	if len(p) > 1 && (p[1] == '/' || p[1] == '\\') {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] == 0x7f || p[i] == '\\' {
			return false
		}
	}
	return true
}

// Callback completes a code-flow login. The state is single use: a
// missing, unknown, expired or replayed state is refused before the
// provider is asked anything.
func (l *Login) Callback(ctx context.Context, state, code, providerError string) (LoginResult, error) {
	if state == "" {
		return LoginResult{}, fmt.Errorf("login callback without state: %w", domain.ErrUnauthenticated)
	}
	pending, err := l.requests.TakeAuthRequest(ctx, Digest(state), l.clock.Now())
	if errors.Is(err, domain.ErrNotFound) {
		return LoginResult{}, fmt.Errorf("login callback: unknown, expired or already used state: %w", domain.ErrUnauthenticated)
	}
	if err != nil {
		return LoginResult{}, err
	}
	if providerError != "" {
		return LoginResult{}, fmt.Errorf("the identity provider refused the login (%s): %w", sanitize(providerError), domain.ErrUnauthenticated)
	}
	if code == "" {
		return LoginResult{}, fmt.Errorf("login callback without code: %w", domain.ErrUnauthenticated)
	}
	ts, err := l.idp.ExchangeCode(ctx, code, pending.Request)
	if err != nil {
		return LoginResult{}, err
	}
	return l.start(ctx, ts, pending.ReturnTo)
}

// sanitize keeps an error code from the provider printable and short.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 64 {
			break
		}
		if r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Field limits of POST /auth/login.
const (
	maxUsername = 255
	maxPassword = 1024
)

// PasswordLogin logs in with username and password (ROPC). Repeated
// failures per username and per client address are refused with
// RetryAfter before the provider is asked.
func (l *Login) PasswordLogin(ctx context.Context, username, password, clientAddr string) (LoginResult, error) {
	if !l.cfg.PasswordLogin {
		return LoginResult{}, fmt.Errorf("password login is switched off (auth.oidc.passwordLogin); use GET /auth/login: %w", domain.ErrNotFound)
	}
	if username == "" || password == "" {
		return LoginResult{}, fmt.Errorf("username and password are required: %w", domain.ErrInvalidInput)
	}
	if len(username) > maxUsername || len(password) > maxPassword {
		return LoginResult{}, fmt.Errorf("username (max %d bytes) or password (max %d bytes) too long: %w", maxUsername, maxPassword, domain.ErrInvalidInput)
	}
	if err := l.idp.Ready(); err != nil {
		return LoginResult{}, err
	}
	user := strings.ToLower(username)
	limits := []ports.LoginLimit{
		{Key: "pair:" + clientAddr + "|" + user, Limit: l.cfg.LoginFailures},
		{Key: "user:" + user, Limit: UserCeiling * l.cfg.LoginFailures},
		{Key: "addr:" + clientAddr, Limit: AddressLimit * l.cfg.LoginFailures},
	}
	now := l.clock.Now()
	if l.cfg.LoginFailures > 0 {
		// The attempt is recorded before the provider is asked and counts
		// as a failure until released: concurrent guesses on every
		// instance see it, so no burst gets past the limits.
		res, err := l.throttle.ReserveLoginAttempt(ctx, limits, now, now.Add(-l.cfg.LoginWindow))
		if err != nil {
			return LoginResult{}, err
		}
		if !res.OK {
			wait := res.Oldest.Add(l.cfg.LoginWindow).Sub(now)
			return LoginResult{}, &RetryAfter{Wait: max(wait, time.Second)}
		}
	}
	ts, err := l.idp.PasswordGrant(ctx, username, password)
	if errors.Is(err, domain.ErrUnauthenticated) {
		return LoginResult{}, ErrBadCredentials // the recorded attempt stays: a failure
	}
	if l.cfg.LoginFailures > 0 {
		// A success, or a failure that is not the user's (the provider is
		// down or refuses our client): the attempt does not count.
		keys := []string{limits[1].Key, limits[2].Key}
		if err != nil {
			keys = append(keys, limits[0].Key)
		}
		if rerr := l.throttle.ReleaseLoginAttempt(context.WithoutCancel(ctx), keys, now); rerr != nil && err == nil {
			err = rerr
		}
		if err == nil {
			// The user got in from this address: its earlier failures
			// from here are forgiven (the username-wide ceiling is not).
			err = l.throttle.ClearLoginFailures(ctx, limits[0].Key)
		}
	}
	if err != nil {
		return LoginResult{}, err
	}
	return l.start(ctx, ts, "")
}

// start creates a session with a new random id.
func (l *Login) start(ctx context.Context, ts ports.TokenSet, returnTo string) (LoginResult, error) {
	now := l.clock.Now()
	cookie := randomToken()
	s := ports.LoginSession{
		IDHash:    Digest(cookie),
		Tokens:    ts,
		Version:   1,
		CreatedAt: now,
		LastSeen:  now,
		ExpiresAt: now.Add(l.cfg.SessionMax),
	}
	if ts.SessionID != "" {
		s.ProviderSID = Digest(ts.SessionID)
	}
	if err := l.sessions.CreateLoginSession(ctx, s); err != nil {
		return LoginResult{}, err
	}
	return LoginResult{Cookie: cookie, Session: s, Principal: l.principalOf(ts), ReturnTo: returnTo}, nil
}

func (l *Login) principalOf(ts ports.TokenSet) domain.Principal {
	return domain.Principal{Subject: ts.Subject, Roles: ts.Roles.Roles, Method: l.cfg.Method, RoleSource: ts.Roles.Source}
}

// ValidCookie reports whether v has the shape of a cookie this service
// issues (43 base64url characters), so garbage never reaches the store.
func ValidCookie(v string) bool {
	if len(v) != 43 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

var errNoSession = fmt.Errorf("login session not found, ended or expired; log in again: %w", domain.ErrUnauthenticated)

// Authenticate resolves a user_session cookie. It refreshes the tokens
// when the access token is about to expire, taking the roles afresh; a
// refresh the provider refuses ends the session.
//
// With the sessions kept in memory (KeepSessionsInMemory), a session used
// before is answered without the store until it must be refreshed, expires
// or goes idle, or this or another instance changes or ends it.
func (l *Login) Authenticate(ctx context.Context, cookie string) (domain.Principal, error) {
	if l.memory == nil || !ValidCookie(cookie) {
		s, err := l.Session(ctx, cookie)
		if err != nil {
			return domain.Principal{}, err
		}
		return l.principalOf(s.Tokens), nil
	}
	hash := Digest(cookie)
	now := l.clock.Now()
	if p, touch, ok := l.memory.lookup(hash, now, l.cfg.SessionIdle); ok {
		if touch {
			if err := l.sessions.TouchLoginSession(ctx, hash, now); errors.Is(err, domain.ErrNotFound) {
				l.memory.forget(hash) // ended and not heard of yet
				return domain.Principal{}, errNoSession
			} else if err != nil {
				return domain.Principal{}, err
			}
		}
		return p, nil
	}
	epoch := l.memory.since()
	s, err := l.Session(ctx, cookie)
	if err != nil {
		return domain.Principal{}, err
	}
	p := l.principalOf(s.Tokens)
	l.memory.remember(epoch, s, p, l.cfg.RefreshBefore)
	return p, nil
}

// expectEcho and awaitEcho bracket ending a session: the answer waits
// until every instance listening has acknowledged acting on the end (see
// acks). Without memory there is nothing to wait for.
func (l *Login) expectEcho(ctx context.Context, hash string) (chan struct{}, error) {
	if l.memory == nil {
		return nil, nil
	}
	listeners, err := l.watch.Listeners(ctx)
	if err != nil {
		return nil, err
	}
	ch, _ := l.memory.acks.expect(hash, listeners, l.memory.isLive())
	return ch, nil
}

func (l *Login) awaitEcho(ctx context.Context, hash string, ch chan struct{}) {
	if l.memory != nil {
		l.memory.acks.await(ctx, hash, ch)
	}
}

// forget drops a session this instance changed or ended from memory.
func (l *Login) forget(hash string) {
	if l.memory != nil {
		l.memory.forget(hash)
	}
}

// Session returns the live session of cookie, refreshed if needed.
func (l *Login) Session(ctx context.Context, cookie string) (ports.LoginSession, error) {
	if !ValidCookie(cookie) {
		return ports.LoginSession{}, errNoSession
	}
	hash := Digest(cookie)
	s, err := l.sessions.GetLoginSession(ctx, hash)
	if errors.Is(err, domain.ErrNotFound) {
		return ports.LoginSession{}, errNoSession
	}
	if err != nil {
		return ports.LoginSession{}, err
	}
	now := l.clock.Now()
	if !now.Before(s.ExpiresAt) || now.Sub(s.LastSeen) >= l.cfg.SessionIdle ||
		(!s.Tokens.RefreshExpiry.IsZero() && !now.Before(s.Tokens.RefreshExpiry) && !now.Before(s.Tokens.AccessExpiry)) {
		l.end(ctx, s)
		return ports.LoginSession{}, errNoSession
	}
	// Without a refresh token (the code flow did not ask for
	// offline_access, see auth.oidc.scopes) a session lasts as long as its
	// access token and then ends, like any session the provider will not
	// renew: a 401, never a failed refresh.
	unrenewable := s.Tokens.RefreshToken == ""
	if unrenewable && !now.Before(s.Tokens.AccessExpiry) {
		l.end(ctx, s)
		return ports.LoginSession{}, errNoSession
	}
	if unrenewable || now.Add(l.cfg.RefreshBefore).Before(s.Tokens.AccessExpiry) {
		if now.Sub(s.LastSeen) >= touchEvery {
			if err := l.sessions.TouchLoginSession(ctx, hash, now); err != nil && !errors.Is(err, domain.ErrNotFound) {
				return ports.LoginSession{}, err
			}
		}
		return s, nil
	}
	return l.refresh(ctx, s, now)
}

// refresh renews the tokens of s. When another instance (or request)
// refreshed first, its result is used.
func (l *Login) refresh(ctx context.Context, s ports.LoginSession, now time.Time) (ports.LoginSession, error) {
	ts, err := l.idp.Refresh(ctx, s.Tokens.RefreshToken)
	switch {
	case errors.Is(err, domain.ErrUnavailable) && now.Before(s.Tokens.AccessExpiry):
		// The provider is down but the access token still holds: keep
		// serving on it rather than lock everyone out; the next request
		// tries again.
		return s, nil
	case errors.Is(err, domain.ErrUnavailable):
		return ports.LoginSession{}, err
	case err != nil:
		// With refresh-token rotation the provider refuses a refresh token
		// that another instance (or request) has just used: if the session
		// moved on meanwhile, that refresh is the one to use.
		if latest, gerr := l.sessions.GetLoginSession(ctx, s.IDHash); gerr == nil && latest.Version > s.Version {
			return latest, nil
		}
		l.end(ctx, s)
		return ports.LoginSession{}, fmt.Errorf("token refresh refused, session ended: %w", errors.Join(err, errNoSession))
	}
	if ts.Subject != s.Tokens.Subject {
		// Fail closed: tokens of someone else never continue a session.
		l.end(ctx, s)
		return ports.LoginSession{}, fmt.Errorf("token refresh named subject %q, the session %q; session ended: %w", ts.Subject, s.Tokens.Subject, errNoSession)
	}
	next := s
	next.Tokens = ts
	if next.Tokens.IDToken == "" {
		next.Tokens.IDToken = s.Tokens.IDToken // kept for the end-session hint
	}
	next.Version = s.Version + 1
	next.LastSeen = now
	l.forget(s.IDHash)
	err = l.sessions.UpdateLoginSession(ctx, next)
	if errors.Is(err, domain.ErrConflict) {
		latest, gerr := l.sessions.GetLoginSession(ctx, s.IDHash)
		if gerr != nil {
			return ports.LoginSession{}, errNoSession
		}
		return latest, nil
	}
	if errors.Is(err, domain.ErrNotFound) {
		return ports.LoginSession{}, errNoSession // logged out meanwhile
	}
	if err != nil {
		return ports.LoginSession{}, err
	}
	return next, nil
}

// end deletes s; a failure is not the caller's problem (the session is
// refused either way) but the expiry sweep will catch it.
func (l *Login) end(ctx context.Context, s ports.LoginSession) {
	l.forget(s.IDHash)
	_ = l.sessions.DeleteLoginSession(ctx, s.IDHash)
}

// Logout ends the session of cookie here and at the provider. It returns
// the provider's end-session URL for the browser ("" when it has none) and,
// apart, the provider's logout error: the provider being unreachable does
// not keep the session alive here.
func (l *Login) Logout(ctx context.Context, cookie string) (endSessionURL string, providerErr error, err error) {
	if !ValidCookie(cookie) {
		return "", nil, errNoSession
	}
	s, err := l.sessions.GetLoginSession(ctx, Digest(cookie))
	if errors.Is(err, domain.ErrNotFound) {
		return "", nil, errNoSession
	}
	if err != nil {
		return "", nil, err
	}
	l.forget(s.IDHash)
	echo, err := l.expectEcho(ctx, s.IDHash)
	if err != nil {
		return "", nil, err
	}
	if err := l.sessions.DeleteLoginSession(ctx, s.IDHash); errors.Is(err, domain.ErrNotFound) {
		return "", nil, errNoSession // a concurrent logout won
	} else if err != nil {
		return "", nil, err
	}
	// Answer only once every instance has acknowledged the end, so that
	// the logged-out cookie is refused everywhere from the next request on.
	l.awaitEcho(ctx, s.IDHash, echo)
	if l.idp == nil {
		return "", nil, nil
	}
	if s.Tokens.RefreshToken != "" {
		providerErr = l.idp.Logout(ctx, s.Tokens.RefreshToken)
	}
	return l.idp.EndSessionURL(s.Tokens.IDToken), providerErr, nil
}

// BackchannelLogout ends, on every instance at once, the login sessions of
// the provider session a back-channel logout token names (or of its
// subject when it names no session), and refuses Bearer access tokens of
// that session from then on. The token is verified completely and
// accepted once across every instance sharing the store; a refused token
// ends nothing and fails with domain.ErrInvalidInput. It returns how many
// login sessions ended.
func (l *Login) BackchannelLogout(ctx context.Context, rawToken string) (int, error) {
	lt, err := l.idp.VerifyLogoutToken(ctx, rawToken)
	if err != nil {
		return 0, err
	}
	now := l.clock.Now()
	if err := l.sessions.UseLogoutToken(ctx, Digest(lt.ID), lt.AcceptedUntil, now); errors.Is(err, domain.ErrConflict) {
		return 0, fmt.Errorf("logout token replayed (its jti was accepted before): %w", domain.ErrInvalidInput)
	} else if err != nil {
		return 0, err
	}
	if lt.Subject != "" && l.managedKeys != nil {
		// Before anything else is ended: answered, the logout holds on
		// every instance for the subject's keys as for its sessions.
		if _, err := l.managedKeys.SetOwnerDisabled(ctx, lt.Subject, true); err != nil {
			return 0, err
		}
	}
	sidHash := ""
	if lt.SessionID != "" {
		sidHash = Digest(lt.SessionID)
		// Access tokens of the session live at most as long as a login
		// session may: refusing them that long outlives every one.
		if err := l.sessions.RevokeProviderSession(ctx, sidHash, now.Add(l.cfg.SessionMax)); err != nil {
			return 0, err
		}
		if l.memory != nil {
			l.memory.heard(ports.RevokedSessionKey(sidHash)) // here at once; the others hear the store
		}
	}
	ended, err := l.sessions.DeleteLoginSessionsOf(ctx, sidHash, lt.Subject)
	for _, h := range ended {
		l.forget(h) // the other instances hear of it from the store's watcher
	}
	return len(ended), err
}

// providerSessionEnded reports whether a back-channel logout ended the
// provider session sid.
// With sessions kept in memory the revocations are in memory too.
func (l *Login) providerSessionEnded(ctx context.Context, sid string) (bool, error) {
	h := Digest(sid)
	if l.memory != nil {
		if ended, known := l.memory.revokedKnown(h); known {
			return ended, nil
		}
	}
	return l.sessions.ProviderSessionRevoked(ctx, h, l.clock.Now())
}

// Sweep deletes expired sessions; the server calls it now and then.
func (l *Login) Sweep(ctx context.Context) (int, error) {
	now := l.clock.Now()
	if l.memory != nil {
		l.memory.prune(now, l.cfg.SessionIdle)
	}
	return l.sessions.DeleteExpiredLoginSessions(ctx, now, now.Add(-l.cfg.SessionIdle))
}

// randomToken is 256 random bits, base64url without padding (43 chars).
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Digest is the hex SHA-256 of a secret, the form in which stores keep it.
func Digest(secret string) string {
	d := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(d[:])
}

// Credentials routes a credential to the right authenticator in OIDC mode:
// the user_session cookie to the login sessions, a Bearer credential to
// each Bearer authenticator in turn (the access-token verifier, and the
// API key when SERVICE_API_KEY is also set, for automation).
type Credentials struct {
	Login  *Login
	Bearer []ports.Authenticator
}

var _ ports.Authenticator = (*Credentials)(nil)

// Authenticate implements ports.Authenticator.
func (c *Credentials) Authenticate(ctx context.Context, cred ports.Credential) (domain.Principal, error) {
	switch cred.Kind {
	case ports.CredentialCookie:
		return c.Login.Authenticate(ctx, cred.Value)
	case ports.CredentialBearer:
		var unavailable, refusal error
		for _, a := range c.Bearer {
			p, err := a.Authenticate(ctx, cred)
			if err == nil && p.SessionID != "" {
				// Checked on every request, after any cache: a back-channel
				// logout on any instance refuses the token at once.
				ended, rerr := c.Login.providerSessionEnded(ctx, p.SessionID)
				switch {
				case rerr != nil:
					return domain.Principal{}, rerr
				case ended:
					return domain.Principal{}, fmt.Errorf("the identity provider ended this token's session (back-channel logout): %w", domain.ErrUnauthenticated)
				}
			}
			if err == nil {
				return p, nil
			}
			if errors.Is(err, domain.ErrUnavailable) && unavailable == nil {
				unavailable = err
			}
			if tr := (*domain.TokenRefusal)(nil); errors.As(err, &tr) && refusal == nil {
				refusal = err
			}
		}
		if unavailable != nil {
			return domain.Principal{}, unavailable
		}
		if refusal != nil {
			// The rule the token failed, for the audit record and the log.
			return domain.Principal{}, refusal
		}
	}
	return domain.Principal{}, fmt.Errorf("credential not accepted: %w", domain.ErrUnauthenticated)
}
