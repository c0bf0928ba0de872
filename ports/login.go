package ports

import (
	"context"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// TokenSet is the outcome of a verified token response: the provider's
// tokens (secrets: never log them), who they name and the roles extracted
// from them.
type TokenSet struct {
	Subject string
	// Username is how the provider names the person: preferred_username,
	// else name, else email, as domain.PersonNameOf keeps it. A label
	// (Principal.Name), never an identity.
	Username string
	Roles    domain.RoleExtraction

	AccessToken  string
	RefreshToken string
	IDToken      string

	AccessExpiry time.Time
	// RefreshExpiry is zero when the provider did not say.
	RefreshExpiry time.Time

	// SessionID is the provider's session the tokens belong to (the sid
	// claim); empty when the tokens name none.
	SessionID string
}

// LogoutToken is a verified back-channel logout token (OpenID Connect
// Back-Channel Logout 1.0): the provider ended session SessionID, or
// every session of Subject when SessionID is empty.
type LogoutToken struct {
	// ID is the token's jti: a token is accepted once.
	ID        string
	SessionID string
	Subject   string
	// AcceptedUntil is when the token stops being accepted (its iat plus
	// the freshness window and clock skew): its ID must be remembered
	// until then.
	AcceptedUntil time.Time
}

// AuthRequest is what GET /auth/login sends to the provider and the
// callback must find again.
type AuthRequest struct {
	State        string
	Nonce        string
	CodeVerifier string
}

// IdentityProvider is the OpenID provider as the login use case needs it.
// Every method that returns tokens has verified them (signature, issuer,
// audience, lifetimes, nonce) and extracted the roles. Failures wrap
// domain.ErrUnauthenticated (bad code, credentials or tokens) or
// domain.ErrUnavailable (the provider cannot be reached or is not
// discovered yet).
type IdentityProvider interface {
	// Ready fails with domain.ErrUnavailable until discovery has succeeded.
	Ready() error
	AuthCodeURL(req AuthRequest) (string, error)
	ExchangeCode(ctx context.Context, code string, req AuthRequest) (TokenSet, error)
	PasswordGrant(ctx context.Context, username, password string) (TokenSet, error)
	Refresh(ctx context.Context, refreshToken string) (TokenSet, error)
	// Logout ends the provider's session of the refresh token.
	Logout(ctx context.Context, refreshToken string) error
	// EndSessionURL is where a browser goes to end its provider session;
	// empty when the provider has none.
	EndSessionURL(idTokenHint string) string
	// VerifyLogoutToken checks a back-channel logout token completely but
	// for replay (signature with the provider's keys, iss, aud, iat
	// freshness, jti, events, sid or sub, no nonce). Failures wrap
	// domain.ErrInvalidInput, or domain.ErrUnavailable before discovery.
	VerifyLogoutToken(ctx context.Context, raw string) (LogoutToken, error)
}

// LoginSession is the server-side state behind one user_session cookie.
// It is stored under the SHA-256 of the cookie value, never the value
// itself, so a copy of the store does not yield working cookies.
type LoginSession struct {
	// IDHash is the hex SHA-256 of the cookie value.
	IDHash string
	Tokens TokenSet
	// Version increases with every update; UpdateLoginSession compares it
	// so that two instances refreshing the same session do not both win.
	Version   int64
	CreatedAt time.Time
	LastSeen  time.Time
	// ExpiresAt is the absolute end of the session (auth.oidc.sessionMax).
	ExpiresAt time.Time
	// ProviderSID is the hex SHA-256 of the provider's session id (the sid
	// claim) at login; empty when the tokens named none. A back-channel
	// logout of that sid ends the session.
	ProviderSID string
}

// LoginSessionStore keeps login sessions. A shared implementation
// (PostgreSQL) makes a session created on one instance valid on all, and a
// logout on one instance refused on all at once: nothing is cached in
// process.
type LoginSessionStore interface {
	CreateLoginSession(ctx context.Context, s LoginSession) error
	// GetLoginSession fails with domain.ErrNotFound when there is none.
	GetLoginSession(ctx context.Context, idHash string) (LoginSession, error)
	// UpdateLoginSession stores s if the stored version is s.Version-1, and
	// fails with domain.ErrConflict otherwise (another instance updated it
	// first) or domain.ErrNotFound when it was deleted.
	UpdateLoginSession(ctx context.Context, s LoginSession) error
	// TouchLoginSession records use at t.
	TouchLoginSession(ctx context.Context, idHash string, t time.Time) error
	// DeleteLoginSession fails with domain.ErrNotFound when there is none.
	DeleteLoginSession(ctx context.Context, idHash string) error
	// DeleteExpiredLoginSessions removes sessions whose absolute end, or
	// idle limit (last seen before idleBefore), has passed, and the
	// back-channel logout records that have expired at now.
	DeleteExpiredLoginSessions(ctx context.Context, now, idleBefore time.Time) (int, error)

	// LatestLoginSessionOf returns the id hash of subject's session last
	// seen; domain.ErrNotFound when it has none.
	LatestLoginSessionOf(ctx context.Context, subject string) (string, error)

	// DeleteLoginSessionsOf removes every session whose ProviderSID is
	// providerSID or, when providerSID is empty, every session of subject,
	// and returns their id hashes (none is not an error).
	DeleteLoginSessionsOf(ctx context.Context, providerSID, subject string) ([]string, error)
	// UseLogoutToken records the hex SHA-256 of a logout token's jti until
	// until; it fails with domain.ErrConflict when the id is recorded and
	// not expired at now (a replay, also one sent to another instance).
	UseLogoutToken(ctx context.Context, idHash string, until, now time.Time) error
	// RevokeProviderSession records that the provider ended the session of
	// sidHash (hex SHA-256 of its sid), until until.
	RevokeProviderSession(ctx context.Context, sidHash string, until time.Time) error
	// ProviderSessionRevoked reports whether sidHash was revoked and the
	// record has not expired at now.
	ProviderSessionRevoked(ctx context.Context, sidHash string, now time.Time) (bool, error)
	// RevokedProviderSessions lists the revocations not expired at now, for
	// an instance that keeps them in memory (the watcher then reports each
	// new one as changed("sid:"+sidHash)).
	RevokedProviderSessions(ctx context.Context, now time.Time) ([]string, error)
}

// RevokedSessionKey is what a LoginSessionWatcher reports for a provider
// session revoked by a back-channel logout: "sid:" and its hash, apart
// from the login sessions' id hashes.
func RevokedSessionKey(sidHash string) string { return revokedPrefix + sidHash }

// RevokedSessionOf returns the provider session hash of a key made by
// RevokedSessionKey.
func RevokedSessionOf(key string) (sidHash string, ok bool) {
	return strings.CutPrefix(key, revokedPrefix)
}

const revokedPrefix = "sid:"

// LoginSessionWatcher reports the login sessions changed (refreshed) or
// ended on any instance sharing the store, so that an instance keeping
// sessions in memory forgets them at once.
type LoginSessionWatcher interface {
	// WatchLoginSessions runs until ctx ends. It calls live(true) once
	// every change from then on will be reported, changed(idHash) for each
	// session updated to a new version or deleted — the changes this
	// instance made included, once committed — and live(false) as soon
	// as changes may go unreported (connection lost) and when it returns.
	WatchLoginSessions(ctx context.Context, changed func(idHash string), live func(bool))
	// Listeners names the listeners, of every instance sharing the store,
	// listening now. Each acknowledges every report it has acted on, once
	// its changed callback returned, with a report made by Ack: an
	// instance that ended a session or revoked a key answers once every
	// listener has, so that every instance refuses it from then on.
	Listeners(ctx context.Context) ([]string, error)
}

// Ack is the report by which listener says it has acted on report.
func Ack(listener, report string) string { return ackPrefix + listener + ":" + report }

// AckOf reads a report made by Ack. Listener names hold no ':'.
func AckOf(ack string) (listener, report string, ok bool) {
	rest, ok := strings.CutPrefix(ack, ackPrefix)
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, ":")
}

const ackPrefix = "ack:"

// AuthRequestStore keeps pending code-flow requests between GET /auth/login
// and the callback. Take is single use: a replayed state finds nothing.
type AuthRequestStore interface {
	PutAuthRequest(ctx context.Context, req PendingAuthRequest) error
	// TakeAuthRequest deletes and returns the request stored under
	// stateHash if it has not expired at now; otherwise domain.ErrNotFound.
	TakeAuthRequest(ctx context.Context, stateHash string, now time.Time) (PendingAuthRequest, error)
}

// PendingAuthRequest is an AuthRequest waiting for its callback.
type PendingAuthRequest struct {
	// StateHash is the hex SHA-256 of the state parameter.
	StateHash string
	Request   AuthRequest
	ReturnTo  string
	ExpiresAt time.Time
}

// LoginLimit is at most Limit failed password logins of Key ("user:alice",
// "addr:203.0.113.9") within the window.
type LoginLimit struct {
	Key   string
	Limit int
}

// LoginReservation is the answer to ReserveLoginAttempt.
type LoginReservation struct {
	// OK: the attempt was recorded under every key and may go ahead.
	OK bool
	// Oldest is, when not OK, the oldest counted attempt of the first
	// limit reached: the wait ends a window after it.
	Oldest time.Time
}

// LoginThrottle counts password-login attempts per key. An attempt is
// recorded before the identity provider is asked and counts as a failure
// until released, so attempts in flight count too; a shared implementation
// (PostgreSQL) makes the limits hold across instances.
type LoginThrottle interface {
	// ReserveLoginAttempt atomically, across every handle of the store:
	// forgets attempts older than since, counts each limit's attempts at or
	// after since and, only if every count is below its limit, records one
	// attempt at t under every key.
	ReserveLoginAttempt(ctx context.Context, limits []LoginLimit, t, since time.Time) (LoginReservation, error)
	// ReleaseLoginAttempt removes the attempt recorded at t under each key
	// (it succeeded, or failed through no fault of the user).
	ReleaseLoginAttempt(ctx context.Context, keys []string, t time.Time) error
	// ClearLoginFailures forgets key's attempts (after a success).
	ClearLoginFailures(ctx context.Context, key string) error
}
