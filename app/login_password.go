package app

// Password login (the resource-owner password grant), with its limits per
// user and per client address.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

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
