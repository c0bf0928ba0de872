package keycloak

import (
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// The provider is reached at an internal URL (the fake OP's server) while
// its tokens and discovery document name a public issuer that this test
// cannot reach (no network): everything the service calls itself must go
// to the internal URL, everything a browser follows must stay public.
func TestInternalAndPublicIssuerURLs(t *testing.T) {
	const public = "https://sso.example.test/realms/agents"
	op := newFakeOP(t)
	op.public = public
	p, err := New(Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: public, DiscoveryURL: op.issuer, ClientID: testClient, ClientSecret: testSecret,
		RedirectURI: "http://127.0.0.1:1/auth/callback"}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Discover(t.Context()); err != nil {
		t.Fatalf("Discover from the internal URL: %v", err)
	}
	d := p.disc.Load()
	for name, u := range map[string]string{"token": d.endpoint.TokenURL, "introspection": d.introspection} {
		if !strings.HasPrefix(u, op.issuer+"/") {
			t.Errorf("%s endpoint %s: want it moved to the internal URL %s", name, u, op.issuer)
		}
	}
	if op.jwksHits.Load() == 0 {
		t.Errorf("the JWKS was not fetched from the internal URL")
	}
	auth, err := p.AuthCodeURL(ports.AuthRequest{State: "s", Nonce: "n", CodeVerifier: strings.Repeat("v", 43)})
	if err != nil || !strings.HasPrefix(auth, public+"/protocol/openid-connect/auth?") {
		t.Errorf("AuthCodeURL = %s, %v; want the public authorization endpoint (browsers go there)", auth, err)
	}
	if end := p.EndSessionURL("hint"); !strings.HasPrefix(end, public+"/") {
		t.Errorf("EndSessionURL = %s; want the public end-session endpoint", end)
	}
	ts, err := p.PasswordGrant(t.Context(), "alice", "alice-pw") // token endpoint via gocloak, at the internal URL
	if err != nil {
		t.Fatalf("PasswordGrant through the internal URL: %v", err)
	}
	if ts.Subject != "user-alice" {
		t.Errorf("subject %q", ts.Subject)
	}
	if err := p.Logout(t.Context(), ts.RefreshToken); err != nil {
		t.Errorf("Logout through the internal URL: %v", err)
	}
	a := NewAuthenticator(p)
	if _, err := a.Authenticate(t.Context(), bearer(op.sign(op.accessClaims(), nil))); err != nil {
		t.Errorf("a Bearer token carrying the public issuer: %v", err)
	}
	internalIss := op.accessClaims()
	internalIss["iss"] = op.issuer
	if _, err := a.Authenticate(t.Context(), bearer(op.sign(internalIss, nil))); !errors.Is(err, domain.ErrUnauthenticated) {
		t.Errorf("a token carrying the internal URL as issuer: got %v, want refused", err)
	}
}

func TestIssuerMismatchStopsTheStart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		split     bool
		wantHints []string
	}{
		{"without a discovery URL", false, []string{"auth.oidc.discoveryUrl", "SERVICE_OIDC_DISCOVERY_URL", "SERVICE_OIDC_ISSUER"}},
		{"with a discovery URL", true, []string{"auth.oidc.discoveryUrl", "public issuer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := newFakeOP(t)
			const other = "https://sso.example.test/realms/agents"
			op.discoveryIssuer = other
			cfg := Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: op.issuer, ClientID: testClient, ClientSecret: testSecret}
			if tc.split {
				cfg.Issuer, cfg.DiscoveryURL = "https://configured.example.test/realms/agents", op.issuer
			}
			_, _, err := Open(cfg, zap.NewNop())
			var mm *IssuerMismatchError
			if !errors.As(err, &mm) || !errors.Is(err, domain.ErrInvalidInput) {
				t.Fatalf("Open: got %v, want an IssuerMismatchError", err)
			}
			msg := err.Error()
			for _, want := range append([]string{cfg.Issuer, other, op.issuer + "/.well-known/openid-configuration"}, tc.wantHints...) {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not name %q", msg, want)
				}
			}
		})
	}
}

func TestDiscoveryURLForm(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://keycloak.auth:8080/realms/agents", true},
		{"http://keycloak.auth:8080/auth/realms/agents", true},
		{"http://keycloak.auth:8080/realms/other", false},
		{"http://keycloak.auth:8080", false},
		{"ftp://keycloak.auth/realms/agents", false},
	} {
		_, err := New(Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: "https://sso.example.test/realms/agents", DiscoveryURL: tc.url, ClientID: testClient, ClientSecret: testSecret}, zap.NewNop())
		if (err == nil) != tc.ok {
			t.Errorf("discovery URL %s: got %v, want ok=%v", tc.url, err, tc.ok)
		}
	}
}
