package keycloak

import (
	"encoding/json"
	"slices"
	"testing"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/domain"
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

// TestBearerAdmitsGatewayResource: a verified access token that names
// neither the client nor the configured audience is admitted when an aud
// value is a gateway resource ({GatewayResourceBase}/mcp/{server},
// canonically), marked resource-only; every other audience is refused,
// and a token for the client stays a full principal whatever else it
// names. Introspected tokens follow the same rule; tokens of a login
// response (kindAccess) never admit a gateway resource alone.
func TestBearerAdmitsGatewayResource(t *testing.T) {
	const base = "https://agentauth.example/aa"
	op := newFakeOP(t)
	p := op.provider(t, func(c *Config) { c.GatewayResourceBase = base + "/" })
	a := NewAuthenticator(p)
	a.noCache = true
	tests := []struct {
		name         string
		azp          string // "" removes the claim
		aud          any
		resourceOnly bool
		reason       string // of a refusal
	}{
		{"client by azp", testClient, []any{"account"}, false, ""},
		{"client in aud", "", []any{testClient}, false, ""},
		{"client and a resource", testClient, []any{base + "/mcp/fs"}, false, ""},
		{"client in aud and a resource", "", []any{testClient, base + "/mcp/fs"}, false, ""},
		{"a resource only", "mcp-client", base + "/mcp/fs", true, ""},
		{"a resource only, no azp", "", []any{base + "/mcp/fs"}, true, ""},
		{"a resource spelt otherwise", "mcp-client", "HTTPS://AGENTAUTH.example:443/aa/mcp/fs", true, ""},
		{"an unrelated aud and a resource", "mcp-client", []any{"account", base + "/mcp/fs"}, true, ""},
		{"two resources", "mcp-client", []any{base + "/mcp/fs", base + "/mcp/db"}, true, ""},
		{"another service's resource", "mcp-client", "https://other.example/aa/mcp/fs", false, ReasonAudience},
		{"an unrelated aud", "mcp-client", []any{"account"}, false, ReasonAudience},
		{"no aud", "mcp-client", nil, false, ReasonAudience},
		{"the base itself", "mcp-client", base, false, ReasonAudience},
		{"the prefix without a server", "mcp-client", base + "/mcp/", false, ReasonAudience},
		{"dot-dot", "mcp-client", base + "/mcp/../x", false, ReasonAudience},
		{"escaped dot-dot", "mcp-client", base + "/mcp/%2e%2e/x", false, ReasonAudience},
		{"mcpx", "mcp-client", base + "/mcpx/s", false, ReasonAudience},
		{"a trailing slash", "mcp-client", base + "/mcp/fs/", false, ReasonAudience},
		{"a path below the server", "mcp-client", base + "/mcp/fs/x", false, ReasonAudience},
		{"a query", "mcp-client", base + "/mcp/fs?x=1", false, ReasonAudience},
		{"a host that only starts alike", "mcp-client", "https://agentauth.example.evil/aa/mcp/fs", false, ReasonAudience},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := op.accessClaims()
			c["aud"] = tt.aud
			if tt.aud == nil {
				delete(c, "aud")
			}
			c["azp"] = tt.azp
			if tt.azp == "" {
				delete(c, "azp")
			}
			got, err := a.Authenticate(t.Context(), bearer(op.sign(c, nil)))
			if code := refusalCode(err); code != tt.reason || (err == nil) != (tt.reason == "") {
				t.Fatalf("Authenticate: %v (reason %q), want reason %q", err, code, tt.reason)
			}
			if got.ResourceOnly != tt.resourceOnly {
				t.Errorf("ResourceOnly = %v, want %v", got.ResourceOnly, tt.resourceOnly)
			}

			// The claims as a provider's JSON answer holds them.
			var claims domain.Claims
			if raw, err := json.Marshal(c); err != nil || json.Unmarshal(raw, &claims) != nil {
				t.Fatal(err)
			}
			claims["active"] = true
			delete(claims, "typ")
			ip, _, err := p.introspectedPrincipal(claims)
			if code := refusalCode(err); code != tt.reason || ip.ResourceOnly != tt.resourceOnly {
				t.Errorf("introspected: %+v, %v; want resource-only %v, reason %q", ip, err, tt.resourceOnly, tt.reason)
			}

			claims["typ"] = "Bearer"
			_, err = p.checkClaims(claims, "", kindAccess, "")
			if want := tt.reason == "" && !tt.resourceOnly; (err == nil) != want {
				t.Errorf("a login response's access token: %v, want accepted %v", err, want)
			}
		})
	}

	t.Run("no gateway resource base", func(t *testing.T) {
		a := NewAuthenticator(op.provider(t, nil))
		c := op.accessClaims()
		c["azp"], c["aud"] = "mcp-client", base+"/mcp/fs"
		if _, err := a.Authenticate(t.Context(), bearer(op.sign(c, nil))); refusalCode(err) != ReasonAudience {
			t.Errorf("Authenticate: %v, want %s", err, ReasonAudience)
		}
	})
}
