package ports

import (
	"context"

	"github.com/agentauth/agentauth/domain"
)

// AgentTokenSigner signs agent tokens and checks the ones presented back.
type AgentTokenSigner interface {
	// Sign returns the signed token of g, naming its key (kid).
	Sign(g domain.AgentGrant) (string, error)
	// Verify checks a token this service signed, for any audience, with
	// the keys now in force; a refused one is a *domain.TokenRefusal
	// matching domain.ErrUnauthenticated.
	Verify(ctx context.Context, token string) (domain.AgentGrant, error)
}
