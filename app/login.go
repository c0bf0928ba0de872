package app

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
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
	return domain.Principal{Subject: ts.Subject, Name: ts.Username, Roles: ts.Roles.Roles, Method: l.cfg.Method, RoleSource: ts.Roles.Source}
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
