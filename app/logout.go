package app

// Logout: by the browser (with the provider's end-session URL) and by the
// provider's back-channel logout token.

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

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
