package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
)

func oidcEnv(extra map[string]string) map[string]string {
	env := map[string]string{
		"SERVICE_OIDC_ENABLED":       "true",
		"SERVICE_OIDC_ISSUER":        "https://kc.example.com/realms/agents",
		"SERVICE_OIDC_CLIENT_ID":     "agentauth",
		"SERVICE_OIDC_CLIENT_SECRET": "s3cret",
		"SERVICE_OIDC_REDIRECT_URI":  "https://agents.example.com/auth/callback",
	}
	for k, v := range extra {
		if v == "" {
			delete(env, k)
			continue
		}
		env[k] = v
	}
	return env
}

func writeOIDCFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestValidateOIDC(t *testing.T) {
	secretFile := writeOIDCFile(t, "secret", "from-file\n")
	emptyFile := writeOIDCFile(t, "empty", "\n")
	tests := []struct {
		name    string
		yaml    string
		env     map[string]string
		wantErr string // "" for valid
	}{
		{name: "spec settings from the environment", env: oidcEnv(nil)},
		{name: "http issuer on loopback", env: oidcEnv(map[string]string{"SERVICE_OIDC_ISSUER": "http://127.0.0.1:8180/realms/agents", "SERVICE_OIDC_REDIRECT_URI": "http://localhost:8080/auth/callback"})},
		{name: "issuer with a path prefix (old Keycloak)", env: oidcEnv(map[string]string{"SERVICE_OIDC_ISSUER": "https://kc.example.com/auth/realms/agents"})},
		{name: "http issuer elsewhere", env: oidcEnv(map[string]string{"SERVICE_OIDC_ISSUER": "http://kc.example.com/realms/agents"}), wantErr: "plain http is allowed only for a loopback host"},
		{name: "issuer without realm", env: oidcEnv(map[string]string{"SERVICE_OIDC_ISSUER": "https://kc.example.com"}), wantErr: "SERVICE_OIDC_ISSUER"},
		{name: "issuer with trailing slash", env: oidcEnv(map[string]string{"SERVICE_OIDC_ISSUER": "https://kc.example.com/realms/agents/"}), wantErr: "no trailing slash"},
		{name: "generic issuer with trailing slash (Auth0)", env: oidcEnv(map[string]string{"SERVICE_OIDC_PROVIDER": "generic", "SERVICE_OIDC_ISSUER": "https://tenant.eu.auth0.com/"})},
		{name: "generic issuer at the root with trailing slash", env: oidcEnv(map[string]string{"SERVICE_OIDC_PROVIDER": "generic", "SERVICE_OIDC_ISSUER": "http://localhost:9998/"})},
		{name: "introspection URL", env: oidcEnv(map[string]string{"SERVICE_OIDC_INTROSPECTION_URL": "http://hydra-admin.auth:4445/admin/oauth2/introspect"})},
		{name: "introspection URL not a URL", env: oidcEnv(map[string]string{"SERVICE_OIDC_INTROSPECTION_URL": "hydra-admin:4445"}), wantErr: "SERVICE_OIDC_INTROSPECTION_URL"},
		{name: "subject claim", env: oidcEnv(map[string]string{"SERVICE_OIDC_SUBJECT_CLAIM": "preferred_username"})},
		{name: "nested subject claim", env: oidcEnv(map[string]string{"SERVICE_OIDC_SUBJECT_CLAIM": "ext.name"}), wantErr: "top-level claim name"},
		{name: "scopes", env: oidcEnv(map[string]string{"SERVICE_OIDC_SCOPES": "openid,profile,offline_access"})},
		{name: "scopes without openid", env: oidcEnv(map[string]string{"SERVICE_OIDC_SCOPES": "profile,email"}), wantErr: "must include openid"},
		{name: "no issuer", env: oidcEnv(map[string]string{"SERVICE_OIDC_ISSUER": ""}), wantErr: "must be set"},
		{name: "no client id", env: oidcEnv(map[string]string{"SERVICE_OIDC_CLIENT_ID": ""}), wantErr: "SERVICE_OIDC_CLIENT_ID"},
		{name: "no secret", env: oidcEnv(map[string]string{"SERVICE_OIDC_CLIENT_SECRET": ""}), wantErr: "needs the client secret"},
		{name: "secret file", env: oidcEnv(map[string]string{"SERVICE_OIDC_CLIENT_SECRET": "", "SERVICE_OIDC_CLIENT_SECRET_FILE": secretFile})},
		{name: "empty secret file", env: oidcEnv(map[string]string{"SERVICE_OIDC_CLIENT_SECRET": "", "SERVICE_OIDC_CLIENT_SECRET_FILE": emptyFile}), wantErr: "is empty"},
		{name: "missing secret file", env: oidcEnv(map[string]string{"SERVICE_OIDC_CLIENT_SECRET": "", "SERVICE_OIDC_CLIENT_SECRET_FILE": "/nonexistent/secret"}), wantErr: "SERVICE_OIDC_CLIENT_SECRET_FILE"},
		{name: "secret in the config file refused", yaml: "auth:\n  oidc:\n    clientSecret: plain\n", env: oidcEnv(map[string]string{"SERVICE_OIDC_CLIENT_SECRET": ""}),
			wantErr: "plain-text client secret in the config file is refused"},
		{name: "secret in the config file refused even when the environment has one", yaml: "auth:\n  oidc:\n    clientSecret: plain\n", env: oidcEnv(nil),
			wantErr: "allowSecretInConfig"},
		{name: "secret in the config file explicitly allowed", yaml: "auth:\n  oidc:\n    clientSecret: plain\n    allowSecretInConfig: true\n", env: oidcEnv(map[string]string{"SERVICE_OIDC_CLIENT_SECRET": ""})},
		{name: "redirect URI elsewhere than /auth/callback", env: oidcEnv(map[string]string{"SERVICE_OIDC_REDIRECT_URI": "https://agents.example.com/cb"}), wantErr: "/auth/callback"},
		{name: "missing CA file", env: oidcEnv(map[string]string{"SERVICE_OIDC_CA_FILE": "/nonexistent/ca.pem"}), wantErr: "SERVICE_OIDC_CA_FILE"},
		{name: "role map", env: oidcEnv(map[string]string{"SERVICE_OIDC_ROLE_MAP": "agent-admin:ADMIN,agent-lead:lead"})},
		{name: "role map to an unknown role", env: oidcEnv(map[string]string{"SERVICE_OIDC_ROLE_MAP": "agent-admin:ROOT"}), wantErr: "not one of ADMIN"},
		{name: "idle longer than max", env: oidcEnv(map[string]string{"SERVICE_OIDC_SESSION_IDLE": "10h", "SERVICE_OIDC_SESSION_MAX": "1h"}), wantErr: "must not exceed"},
		{name: "skew too large", env: oidcEnv(map[string]string{"SERVICE_OIDC_CLOCK_SKEW": "1h"}), wantErr: "SERVICE_OIDC_CLOCK_SKEW"},
		{name: "refetch too often", env: oidcEnv(map[string]string{"SERVICE_OIDC_JWKS_REFETCH": "10ms"}), wantErr: "SERVICE_OIDC_JWKS_REFETCH"},
		{name: "OIDC off: nothing checked", env: map[string]string{"SERVICE_OIDC_ISSUER": "ftp://x"}},
		{name: "generic provider, any issuer form", env: oidcEnv(map[string]string{"SERVICE_OIDC_PROVIDER": "generic", "SERVICE_OIDC_ISSUER": "https://example.okta.com/oauth2/default", "SERVICE_OIDC_ROLES_CLAIM": "groups"})},
		{name: "generic provider, internal discovery URL of another form", env: oidcEnv(map[string]string{"SERVICE_OIDC_PROVIDER": "generic", "SERVICE_OIDC_ISSUER": "https://login.example.com", "SERVICE_OIDC_DISCOVERY_URL": "http://idp.internal:8080"})},
		{name: "Keycloak provider, issuer of another form", env: oidcEnv(map[string]string{"SERVICE_OIDC_ISSUER": "https://example.okta.com/oauth2/default"}), wantErr: "/realms/<realm>"},
		{name: "unknown provider", env: oidcEnv(map[string]string{"SERVICE_OIDC_PROVIDER": "okta"}), wantErr: "SERVICE_OIDC_PROVIDER"},
		{name: "roles claim path with an empty part", env: oidcEnv(map[string]string{"SERVICE_OIDC_ROLES_CLAIM": "resource_access..roles"}), wantErr: "SERVICE_OIDC_ROLES_CLAIM"},
		{name: "callback under the base path", env: oidcEnv(map[string]string{"SERVICE_BASE_PATH": "/agentauth", "SERVICE_OIDC_REDIRECT_URI": "https://agents.example.com/agentauth/auth/callback"})},
		{name: "callback outside the base path", env: oidcEnv(map[string]string{"SERVICE_BASE_PATH": "/agentauth"}), wantErr: "served under server.basePath"},
		{name: "base path with a trailing slash", env: oidcEnv(map[string]string{"SERVICE_BASE_PATH": "/agentauth/", "SERVICE_OIDC_REDIRECT_URI": "https://agents.example.com/agentauth/auth/callback"}), wantErr: "SERVICE_BASE_PATH"},
		{name: "base path with a dot segment", env: oidcEnv(map[string]string{"SERVICE_BASE_PATH": "/a/../b"}), wantErr: "SERVICE_BASE_PATH"},
		{name: "internal discovery URL", env: oidcEnv(map[string]string{"SERVICE_OIDC_DISCOVERY_URL": "http://keycloak.auth:8080/realms/agents"})},
		{name: "discovery URL of another realm", env: oidcEnv(map[string]string{"SERVICE_OIDC_DISCOVERY_URL": "http://keycloak.auth:8080/realms/other"}), wantErr: "SERVICE_OIDC_DISCOVERY_URL"},
		{name: "discovery URL equal to the issuer", env: oidcEnv(map[string]string{"SERVICE_OIDC_DISCOVERY_URL": "https://kc.example.com/realms/agents"}), wantErr: "leave it unset"},
		{name: "additional issuer", yaml: "auth:\n  oidc:\n    additionalIssuers:\n      - issuer: https://kc.example.com/realms/machines\n        clientId: robots\n        discoveryUrl: http://keycloak.auth:8080/realms/machines\n", env: oidcEnv(nil)},
		{name: "additional issuer without client id", yaml: "auth:\n  oidc:\n    additionalIssuers:\n      - issuer: https://kc.example.com/realms/machines\n", env: oidcEnv(nil),
			wantErr: "auth.oidc.additionalIssuers[0].clientId"},
		{name: "additional issuer equal to the primary", yaml: "auth:\n  oidc:\n    additionalIssuers:\n      - issuer: https://kc.example.com/realms/agents\n        clientId: x\n", env: oidcEnv(nil),
			wantErr: "named twice"},
		{name: "additional issuer with a missing CA file", yaml: "auth:\n  oidc:\n    additionalIssuers:\n      - issuer: https://kc.example.com/realms/machines\n        clientId: x\n        caFile: /nonexistent/ca.pem\n", env: oidcEnv(nil),
			wantErr: "additionalIssuers[0].caFile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.yaml != "" {
				path = writeOIDCFile(t, "agentauth.yaml", tt.yaml)
			}
			cfg, err := Load(path, tt.env)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			err = cfg.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate: got %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate: got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestOIDCValues(t *testing.T) {
	secretFile := writeOIDCFile(t, "secret", "from-file\n")
	yaml := writeOIDCFile(t, "agentauth.yaml", `auth:
  oidc:
    enabled: true
    issuer: https://file.example.com/realms/x
    clientId: from-file
    passwordLogin: false
    sessionIdle: 30m
    roleMap:
      agent-admin: admin
`)
	env := map[string]string{
		"SERVICE_OIDC_ISSUER":             "https://env.example.com/realms/agents",
		"SERVICE_OIDC_CLIENT_SECRET_FILE": secretFile,
		"NODE_EXTRA_CA_CERTS":             "/etc/node-ca.pem",
		"SERVICE_OIDC_CA_FILE":            "/etc/ca.pem",
	}
	cfg, err := Load(yaml, env)
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.Auth.OIDC
	if o.Issuer != "https://env.example.com/realms/agents" || o.ClientID != "from-file" {
		t.Errorf("precedence: got issuer %q client %q; want the environment over the file", o.Issuer, o.ClientID)
	}
	if s, err := o.Secret(); s != "from-file" || err != nil {
		t.Errorf("Secret: got %q, %v; want the trimmed file content", s, err)
	}
	if o.PasswordLoginEnabled() {
		t.Errorf("passwordLogin: false in the file, got enabled")
	}
	if got := o.CAFiles(); len(got) != 2 || got[0] != "/etc/ca.pem" || got[1] != "/etc/node-ca.pem" {
		t.Errorf("CAFiles: got %v", got)
	}
	if got := o.Roles(); got["agent-admin"] != domain.RoleAdmin {
		t.Errorf("Roles: got %v", got)
	}
	// The file's value, and the defaults for what neither sets.
	if o.SessionIdle != 30*time.Minute || o.SessionMax != 24*time.Hour || o.LoginFailures != 5 {
		t.Errorf("session limits: got idle %s, max %s, failures %d; want 30m, 24h, 5", o.SessionIdle, o.SessionMax, o.LoginFailures)
	}
	if !(OIDC{}).PasswordLoginEnabled() {
		t.Errorf("password login is on by default (the specification lists it)")
	}
}
