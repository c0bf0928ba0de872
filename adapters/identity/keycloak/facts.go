package keycloak

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Facts are what the provider's discovery document says it offers, for
// agentauth oidc check: facts to report, not failures.
type Facts struct {
	// Grants are grant_types_supported; nil when the document does not say.
	Grants        []string
	PasswordGrant bool
	// Endpoints, empty when not advertised.
	Introspection, Userinfo, EndSession, Revocation string
	// Scopes are those the code flow asks for.
	Scopes []string
}

// Facts reports the discovered provider; the zero Facts before discovery.
func (p *Provider) Facts() Facts {
	d := p.disc.Load()
	if d == nil {
		return Facts{}
	}
	return Facts{Grants: slices.Clone(d.grants), PasswordGrant: p.PasswordGrantOffered(), Introspection: d.introspection,
		Userinfo: d.userinfo, EndSession: d.endSession, Revocation: d.revocation, Scopes: slices.Clone(p.scopes(d))}
}

// RoleSources are the claims roles may come from for a verified token
// set, in the order they are read: the id token, the userinfo answer (a
// generic provider, asked now) and the access token when it is a JWT.
func (p *Provider) RoleSources(ctx context.Context, ts ports.TokenSet) ([]domain.ClaimSource, error) {
	out := []domain.ClaimSource{{Token: domain.TokenID, Claims: payloadOf(ts.IDToken)}}
	if p.cfg.Generic {
		ui, err := p.userinfo(ctx, ts.AccessToken)
		if err != nil {
			return nil, err
		}
		out = append(out, domain.ClaimSource{Token: domain.TokenUserinfo, Claims: ui})
	}
	return append(out, domain.ClaimSource{Token: domain.TokenAccess, Claims: payloadOf(ts.AccessToken)}), nil
}

// TokenClaims are the claims roles are read from for a Bearer token the
// Authenticator accepted: a JWT's payload, else the provider's
// introspection answer.
func (p *Provider) TokenClaims(ctx context.Context, token string) (domain.ClaimSource, error) {
	if c := payloadOf(token); c != nil {
		return domain.ClaimSource{Token: domain.TokenAccess, Claims: c}, nil
	}
	c, err := p.introspect(ctx, token)
	return domain.ClaimSource{Token: domain.TokenIntrospection, Claims: c}, err
}

// RolesClaim names where roles are read, for reports.
func (p *Provider) RolesClaim() string {
	if p.cfg.RolesClaim != "" {
		return p.cfg.RolesClaim
	}
	return "realm_access.roles and resource_access." + p.cfg.ClientID + ".roles"
}

// payloadOf decodes a JWS payload without verifying it (for display of
// tokens verified elsewhere); nil when raw is not a JWS.
func payloadOf(raw string) domain.Claims {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil
	}
	var c domain.Claims
	if json.Unmarshal(b, &c) != nil {
		return nil
	}
	return c
}
