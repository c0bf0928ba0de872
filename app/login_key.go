package app

// Key sign-in (local, API-key and debug modes): a browser exchanges an API
// key for a cookie session.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

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
