package ports

import (
	"context"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// UpstreamAuthorizer speaks OAuth 2.0 with the authorization servers of
// servers' upstreams, for each person's own credential (adapters/
// upstreamauth): discovery, the authorization-code flow with PKCE,
// refresh, revocation and token exchange. It keeps no tokens. Failures
// wrap domain.ErrUnavailable (unreachable, not discovered, an answer that
// is not OAuth) or are an *UpstreamRefusal (the authorization server
// answered an OAuth error).
type UpstreamAuthorizer interface {
	// Discover finds the authorization server of sv's upstream_auth (its
	// issuer, or the one the endpoint's RFC 9728 metadata names) from its
	// RFC 8414 or OpenID discovery document; answers are kept a while.
	Discover(ctx context.Context, sv domain.Server) (UpstreamAS, error)
	// AuthCodeURL is where a person's browser goes to connect: the
	// authorization-code request with PKCE (S256), state and, when
	// as.Resource is set, the RFC 8707 resource.
	AuthCodeURL(as UpstreamAS, state, verifier, redirectURI string) string
	// ExchangeCode redeems the code the callback brought.
	ExchangeCode(ctx context.Context, as UpstreamAS, code, verifier, redirectURI string) (UpstreamTokens, error)
	// Refresh uses a refresh token (RFC 6749 §6).
	Refresh(ctx context.Context, as UpstreamAS, refreshToken string) (UpstreamTokens, error)
	// Revoke revokes a token at the revocation endpoint (RFC 7009); false
	// when the authorization server offers none.
	Revoke(ctx context.Context, as UpstreamAS, token, hint string) (bool, error)
	// Exchange exchanges a person's access token for one issued to
	// as.Audience (RFC 8693).
	Exchange(ctx context.Context, as UpstreamAS, subjectToken string) (UpstreamTokens, error)
}

// UpstreamAS is an upstream's authorization server as discovered, with
// what agentauth asks of it.
type UpstreamAS struct {
	Issuer                                    string
	AuthURL, TokenURL, RevocationURL, JWKSURL string
	ClientID                                  string
	Scopes                                    []string
	Resource, Audience                        string
	// ClientSecret is read from its file (a secret: never log it).
	ClientSecret string
	// PostAuth: the client authenticates in the request body
	// (client_secret_post), not with HTTP Basic.
	PostAuth bool
}

// UpstreamTokens is a token response.
type UpstreamTokens struct {
	AccessToken, RefreshToken string
	// Expiry is zero when the answer gave no lifetime.
	Expiry time.Time
	// Scopes are those granted (the answer's scope, else those asked).
	Scopes []string
	// Subject is the sub of the id token, verified, when one came.
	Subject string
}

// UpstreamRefusal is an OAuth error an authorization server answered
// (RFC 6749 §5.2): Code is its error code.
type UpstreamRefusal struct {
	Code, Description string
	Status            int
}

func (e *UpstreamRefusal) Error() string {
	s := "the authorization server refused: " + e.Code
	if e.Description != "" {
		s += " (" + e.Description + ")"
	}
	return s
}

// Is makes errors.Is(err, domain.ErrInvalidInput) hold: what was sent
// (a code, a refresh token, a subject token) was refused.
func (e *UpstreamRefusal) Is(target error) bool { return target == domain.ErrInvalidInput }
