package app

// The OIDC authorisation-code flow: Begin sends the browser to the
// provider, Callback starts the session it comes back with.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// authRequestTTL bounds the time between GET /auth/login and the callback.
const authRequestTTL = 10 * time.Minute

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
