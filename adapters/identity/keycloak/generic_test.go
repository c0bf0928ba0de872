package keycloak

import (
	"errors"
	"slices"
	"testing"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/domain"
)

// TestGenericProvider: an OpenID provider whose issuer is not of
// Keycloak's form (here …/oauth2/default, as Okta names it) works when the
// operator says it is generic: the password grant and refresh go to the
// token endpoint of its discovery document, and roles come from
// auth.oidc.rolesClaim.
func TestGenericProvider(t *testing.T) {
	op := newFakeOPAt(t, "/oauth2/default")
	op.roles = []any{"user"} // Keycloak's claim says USER; the configured claim says LEAD
	op.extra = map[string]any{"groups": []any{"lead", "engineering"}}
	op.grants = []string{"authorization_code", "refresh_token", "password"}
	cfg := Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: op.issuer, ClientID: testClient, ClientSecret: testSecret, RedirectURI: "http://127.0.0.1:1/auth/callback"}
	if _, err := New(cfg, zap.NewNop()); !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("a non-Keycloak issuer without Generic: got %v, want ErrInvalidInput", err)
	}
	cfg.Generic, cfg.RolesClaim = true, "groups"
	p, err := New(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Discover(t.Context()); err != nil {
		t.Fatalf("Discover: %v", err)
	}
	ts, err := p.PasswordGrant(t.Context(), "alice", "alice-pw")
	if err != nil {
		t.Fatalf("PasswordGrant at the discovered token endpoint: %v", err)
	}
	if !slices.Equal(ts.Roles.Roles, []domain.Role{domain.RoleLead}) || ts.Roles.Source != domain.TokenID {
		t.Errorf("roles %+v, want [LEAD] from the id token's groups", ts.Roles)
	}
	if _, err := p.PasswordGrant(t.Context(), "alice", "wrong"); !errors.Is(err, domain.ErrUnauthenticated) {
		t.Errorf("wrong password: got %v, want ErrUnauthenticated", err)
	}
	ts, err = p.Refresh(t.Context(), ts.RefreshToken)
	if err != nil || ts.RefreshToken != "rt-alice" {
		t.Fatalf("Refresh: %+v, %v", ts, err)
	}
	if err := p.Logout(t.Context(), ts.RefreshToken); err != nil {
		t.Errorf("Logout without a revocation endpoint: %v, want nil (nothing to call)", err)
	}
	got, err := NewAuthenticator(p).Authenticate(t.Context(), bearer(op.sign(op.accessClaims(), nil)))
	if err != nil || !slices.Equal(got.Roles, []domain.Role{domain.RoleLead}) {
		t.Errorf("Bearer: %+v, %v; want LEAD from groups", got, err)
	}
}

func TestRolesClaimWithKeycloak(t *testing.T) {
	op := newFakeOP(t)
	op.roles = nil
	op.extra = map[string]any{"resource_access": map[string]any{"agent-service": map[string]any{"roles": []any{"auditor"}}}}
	p := op.provider(t, func(c *Config) { c.RolesClaim = "resource_access.agent-service.roles" })
	got, err := NewAuthenticator(p).Authenticate(t.Context(), bearer(op.sign(op.accessClaims(), nil)))
	if err != nil || !slices.Equal(got.Roles, []domain.Role{domain.RoleAuditor}) {
		t.Errorf("Bearer: %+v, %v; want AUDITOR from resource_access.agent-service.roles (another client's, chosen by the operator)", got, err)
	}
}
