package app

// Credential routing: a cookie goes to the login sessions, a Bearer
// credential to the mode's authenticators.

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

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
