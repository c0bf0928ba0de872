package app

// Credential routing: a cookie goes to the login sessions, a Bearer
// credential to the mode's authenticators, by its syntax.

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Credentials routes a credential to the right authenticator: the
// user_session cookie to the login sessions, a Bearer credential by its
// syntax, a JWT to the identity provider's access-token verifier first and
// anything else (an API key, an opaque access token) to the keys first.
// Each goes to the other when the first refuses it, so the syntax decides
// what a request costs (a key is no longer refused by the verifier, with a
// formatted error, before the keys accept it), never whether it passes.
type Credentials struct {
	Login *Login
	// Tokens verifies access tokens (OIDC mode); nil: none.
	Tokens ports.Authenticator
	// Keys checks API keys: the mode's ring, or SERVICE_API_KEY's in OIDC
	// mode (automation); nil: none.
	Keys ports.Authenticator
}

var _ ports.Authenticator = (*Credentials)(nil)

// bearerOrder is the order a Bearer credential is offered in.
func (c *Credentials) bearerOrder(v string) [2]ports.Authenticator {
	if domain.LooksLikeJWT(v) {
		return [2]ports.Authenticator{c.Tokens, c.Keys}
	}
	return [2]ports.Authenticator{c.Keys, c.Tokens}
}

// Authenticate implements ports.Authenticator.
func (c *Credentials) Authenticate(ctx context.Context, cred ports.Credential) (domain.Principal, error) {
	switch cred.Kind {
	case ports.CredentialCookie:
		return c.Login.Authenticate(ctx, cred.Value)
	case ports.CredentialBearer:
		var unavailable, refusal error
		for _, a := range c.bearerOrder(cred.Value) {
			if a == nil {
				continue
			}
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
