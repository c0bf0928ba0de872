package keycloak

import (
	"slices"
	"testing"

	"go.uber.org/zap"
)

// TestBearerPrincipalCarriesAudience: the principal of a Bearer access
// token carries its aud, which the MCP gateway matches against the
// resource called (RFC 8707).
func TestBearerPrincipalCarriesAudience(t *testing.T) {
	op := newFakeOP(t)
	p, stop, err := Open(Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: op.issuer, ClientID: testClient, ClientSecret: testSecret}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	a := NewAuthenticator(p)
	a.noCache = true
	for _, tc := range []struct {
		name string
		aud  any
		want []string
	}{
		{"one resource", "https://agentauth.example/mcp/fs", []string{"https://agentauth.example/mcp/fs"}},
		{"the client and a resource", []any{testClient, "https://agentauth.example/mcp/fs"}, []string{testClient, "https://agentauth.example/mcp/fs"}},
		{"none", nil, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := op.accessClaims()
			c["azp"] = testClient
			if tc.aud == nil {
				delete(c, "aud")
			} else {
				c["aud"] = tc.aud
			}
			got, err := a.Authenticate(t.Context(), bearer(op.sign(c, nil)))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Audience, tc.want) {
				t.Errorf("Audience = %q, want %q", got.Audience, tc.want)
			}
		})
	}
}
