package app

// Cookie authentication: the user_session cookie resolved to its login
// session, refreshed with the provider when its tokens near their end,
// and the sweep of expired sessions.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// touchEvery limits how often a session's last use is written: once a
// minute is precise enough for an idle limit counted in minutes or hours.
const touchEvery = time.Minute

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
	return l.session(ctx, Digest(cookie), true)
}

// ProviderToken is subject's access token from the identity provider:
// that of its login session last used, refreshed when it nears its end
// (what a token exchange presents on the person's behalf). A use does not
// count as the person's: the session's idle limit runs on. It fails with
// domain.ErrUnauthenticated when the person has no live session.
func (l *Login) ProviderToken(ctx context.Context, subject string) (string, error) {
	hash, err := l.sessions.LatestLoginSessionOf(ctx, subject)
	if errors.Is(err, domain.ErrNotFound) {
		return "", errNoSession
	}
	if err != nil {
		return "", err
	}
	s, err := l.session(ctx, hash, false)
	if err != nil {
		return "", err
	}
	return s.Tokens.AccessToken, nil
}

// session returns the live session hash, refreshed if needed; touch
// records the use.
func (l *Login) session(ctx context.Context, hash string, touch bool) (ports.LoginSession, error) {
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
		if touch && now.Sub(s.LastSeen) >= touchEvery {
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

// Sweep deletes expired sessions; the server calls it now and then.
func (l *Login) Sweep(ctx context.Context) (int, error) {
	now := l.clock.Now()
	if l.memory != nil {
		l.memory.prune(now, l.cfg.SessionIdle)
	}
	return l.sessions.DeleteExpiredLoginSessions(ctx, now, now.Add(-l.cfg.SessionIdle))
}
