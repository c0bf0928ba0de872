package keycloak

import (
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/domain"
)

// TestAdditionalIssuers: a second realm's access tokens are accepted as
// Bearer tokens with roles taken the same way; each token is checked by
// exactly the issuer it names, with that issuer's keys and client id.
func TestAdditionalIssuers(t *testing.T) {
	primary, machines := newFakeOP(t), newFakeOP(t)
	cfg := Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: primary.issuer, ClientID: testClient, ClientSecret: testSecret,
		Additional: []Trusted{{Issuer: machines.issuer, ClientID: "machine-client"}}}
	p, stop, err := Open(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	a := NewAuthenticator(p)
	a.noCache = true

	machineClaims := func(mut func(map[string]any)) map[string]any {
		c := machines.accessClaims()
		c["azp"], c["sub"], c["sid"] = "machine-client", "robot-1", "machine-session"
		if mut != nil {
			mut(c)
		}
		return c
	}
	wrongIssuer := machineClaims(func(c map[string]any) { c["iss"] = "https://elsewhere.example.test/realms/agents" })
	for _, tc := range []struct {
		name    string
		token   string
		subject string
		wantErr string
	}{
		{"primary realm", primary.sign(primary.accessClaims(), nil), "user-alice", ""},
		{"second realm, its client", machines.sign(machineClaims(nil), nil), "robot-1", ""},
		{"second realm's claims signed with the primary's key", primary.sign(machineClaims(nil), nil), "", "verify"},
		{"primary's claims signed with the second realm's key", machines.sign(primary.accessClaims(), nil), "", "verify"},
		{"second realm, issued to the primary's client id", machines.sign(machineClaims(func(c map[string]any) { c["azp"] = testClient }), nil), "", "not to client"},
		{"an issuer not configured", machines.sign(wrongIssuer, nil), "", "not trusted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := a.Authenticate(t.Context(), bearer(tc.token))
			if tc.wantErr != "" {
				if !errors.Is(err, domain.ErrUnauthenticated) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %+v, %v; want ErrUnauthenticated mentioning %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got.Subject != tc.subject || !got.Has(domain.RoleAdmin) {
				t.Errorf("principal %+v, want %s with ADMIN (realm role admin)", got, tc.subject)
			}
			if tc.subject == "robot-1" && got.SessionID != "" {
				t.Errorf("SessionID %q of a second-realm token: back-channel logouts come from the primary only", got.SessionID)
			}
		})
	}
	if _, err := p.PasswordGrant(t.Context(), "alice", "alice-pw"); err != nil || primary.tokenHits.Load() == 0 || machines.tokenHits.Load() != 0 {
		t.Errorf("password login: %v (token endpoint hits: primary %d, second %d); want it on the primary only", err, primary.tokenHits.Load(), machines.tokenHits.Load())
	}
}
