package wire_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentauth/agentauth/adapters/identity/keycloak"
	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/wire"
)

// TestKeycloakConfig checks the one mapping of auth.oidc to the identity
// adapter's configuration, which the service and agentauth oidc check
// share: every setting arrives, additional issuers with their CA bundle,
// the secret read from its file, the gateway's resource URL.
func TestKeycloakConfig(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	oidc := config.OIDC{
		Issuer: "https://kc.example/realms/a", DiscoveryURL: "http://kc:8080/realms/a", ClientID: "agentauth",
		RedirectURI: "https://app.example/auth/callback", CAFile: "/ca.pem", RoleMap: map[string]string{"ops": "lead"},
		Scopes: []string{"openid"}, Audience: "api", RolesClaim: "groups", SubjectClaim: "email",
		IntrospectionURL: "https://kc.example/introspect",
		AdditionalIssuers: []config.TrustedIssuer{
			{Issuer: "https://kc.example/realms/b", ClientID: "b", CAFile: "/b.pem"},
			{Issuer: "https://other.example", ClientID: "c", DiscoveryURL: "http://other"},
		},
	}
	tests := []struct {
		name   string
		mut    func(*config.Config)
		want   func(*keycloak.Config)
		wantOK bool
	}{
		{"secret from the environment", func(c *config.Config) { c.Auth.OIDC.ClientSecret = "env-secret" },
			func(k *keycloak.Config) { k.ClientSecret = "env-secret" }, true},
		{"secret from its file", func(c *config.Config) { c.Auth.OIDC.ClientSecretFile = secretFile },
			func(k *keycloak.Config) { k.ClientSecret = "s3cret" }, true},
		{"generic provider", func(c *config.Config) {
			c.Auth.OIDC.ClientSecret = "x"
			c.Auth.OIDC.Provider = config.ProviderGeneric
		}, func(k *keycloak.Config) { k.ClientSecret, k.Generic = "x", true }, true},
		{"gateway resource URL", func(c *config.Config) {
			c.Auth.OIDC.ClientSecret = "x"
			c.Gateway.ResourceURL = "https://gw.example/"
		}, func(k *keycloak.Config) { k.ClientSecret, k.GatewayResourceBase = "x", "https://gw.example" }, true},
		{"secret file missing", func(c *config.Config) { c.Auth.OIDC.ClientSecretFile = filepath.Join(dir, "none") }, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Defaults()
			cfg.Auth.OIDC = oidc
			cfg.Gateway.ResourceURL = "https://api.example"
			tt.mut(&cfg)
			got, err := wire.KeycloakConfig(cfg)
			if !tt.wantOK {
				if err == nil {
					t.Fatalf("got no error, want one")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			o := cfg.Auth.OIDC
			want := keycloak.Config{
				Additional: []keycloak.Trusted{
					{Issuer: "https://kc.example/realms/b", ClientID: "b", CAFiles: []string{"/b.pem"}},
					{Issuer: "https://other.example", ClientID: "c", DiscoveryURL: "http://other"},
				},
				RolesClaim: "groups", Audience: "api", SubjectClaim: "email", IntrospectionURL: "https://kc.example/introspect",
				Scopes: []string{"openid"}, Issuer: o.Issuer, DiscoveryURL: o.DiscoveryURL, ClientID: "agentauth",
				RedirectURI: o.RedirectURI, CAFiles: []string{"/ca.pem"}, RoleMap: map[string]domain.Role{"ops": "LEAD"},
				KeyRefetch: o.JWKSRefetch, Skew: o.ClockSkew, HTTPTimeout: o.HTTPTimeout, CacheSize: o.TokenCacheSize,
				GatewayResourceBase: "https://api.example",
			}
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}
