package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func secretAt(t *testing.T, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSecretFiles: SERVICE_API_KEY_FILE, SERVICE_DATABASE_URL_FILE and
// SERVICE_OIDC_CLIENT_SECRET_FILE follow one set of rules: owner-only
// file, trailing newline dropped, not empty, not together with the value.
func TestSecretFiles(t *testing.T) {
	key := secretAt(t, "file-key-0123456789abcdef\n", 0o600)
	url := secretAt(t, "postgres://agentauth:pw@db.internal:5432/agentauth\r\n", 0o400)
	open := secretAt(t, "file-key-0123456789abcdef\n", 0o644)
	empty := secretAt(t, "\n", 0o600)
	seed := secretAt(t, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8\n", 0o400)
	oidc := map[string]string{"SERVICE_OIDC_ENABLED": "true", "SERVICE_OIDC_ISSUER": "https://kc.example.com/realms/agents",
		"SERVICE_OIDC_CLIENT_ID": "agentauth", "SERVICE_OIDC_REDIRECT_URI": "https://agentauth.example.com/auth/callback"}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name    string
		env     map[string]string
		flags   map[string]string
		check   func(Config) bool
		wantErr []string
	}{
		{"api key from a file", with(nil, "SERVICE_API_KEY_FILE", key), nil,
			func(c Config) bool { return c.Auth.APIKey == "file-key-0123456789abcdef" && c.Mode() == ModeAPIKey }, nil},
		{"api key file as a flag", nil, map[string]string{"api-key-file": key},
			func(c Config) bool { return c.Auth.APIKey == "file-key-0123456789abcdef" }, nil},
		{"database URL from a file", with(nil, "SERVICE_DATABASE_URL_FILE", url, "SERVICE_AUDIT_SIGNING_KEY_FILE", seed, "SERVICE_AGENT_TOKENS_SIGNING_KEY_FILE", seed), nil,
			func(c Config) bool { return c.Database.URL == "postgres://agentauth:pw@db.internal:5432/agentauth" }, nil},
		{"api key and its file", with(nil, "SERVICE_API_KEY", "env-key-0123456789abcdef", "SERVICE_API_KEY_FILE", key), nil, nil,
			[]string{"SERVICE_API_KEY / --api-key and auth.apiKeyFile / SERVICE_API_KEY_FILE / --api-key-file are both set"}},
		{"database URL and its file", with(nil, "SERVICE_DATABASE_URL", "postgres://x@y/z", "SERVICE_DATABASE_URL_FILE", url), nil, nil,
			[]string{"SERVICE_DATABASE_URL", "SERVICE_DATABASE_URL_FILE", "are both set"}},
		{"readable by others", with(nil, "SERVICE_API_KEY_FILE", open), nil, nil,
			[]string{"SERVICE_API_KEY_FILE", "mode 0644", "readable by its owner only"}},
		{"empty", with(nil, "SERVICE_DATABASE_URL_FILE", empty), nil, nil, []string{"SERVICE_DATABASE_URL_FILE", "is empty"}},
		{"missing", with(nil, "SERVICE_API_KEY_FILE", "/nonexistent/key"), nil, nil,
			[]string{"SERVICE_API_KEY_FILE / --api-key-file: cannot read /nonexistent/key: no such file or directory"}},
		{"audit signing key from a file", with(nil, "SERVICE_AUDIT_SIGNING_KEY_FILE", seed), nil,
			func(c Config) bool { return c.Audit.SigningKey == "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8" }, nil},
		{"audit signing key file readable by others", with(nil, "SERVICE_AUDIT_SIGNING_KEY_FILE", secretAt(t, "x\n", 0o640)), nil, nil,
			[]string{"audit.signingKeyFile", "mode 0640", "readable by its owner only"}},
		{"audit signing key file missing", with(nil, "SERVICE_AUDIT_SIGNING_KEY_FILE", "/nonexistent/key"), nil, nil,
			[]string{"audit.signingKeyFile", "no such file"}},
		{"audit signing key not a seed", with(nil, "SERVICE_AUDIT_SIGNING_KEY", "file-key-0123456789abcdef"), nil, nil,
			[]string{"SERVICE_AUDIT_SIGNING_KEY", "32-byte Ed25519 seed"}},
		{"oidc secret and its file", with(oidc, "SERVICE_OIDC_CLIENT_SECRET", "s", "SERVICE_OIDC_CLIENT_SECRET_FILE", key), nil, nil,
			[]string{"SERVICE_OIDC_CLIENT_SECRET and auth.oidc.clientSecretFile / SERVICE_OIDC_CLIENT_SECRET_FILE are both set"}},
		{"oidc secret file readable by others", with(oidc, "SERVICE_OIDC_CLIENT_SECRET_FILE", open), nil, nil,
			[]string{"SERVICE_OIDC_CLIENT_SECRET_FILE", "readable by its owner only"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Resolve("", with(tt.env, "SERVICE_DATA_DIR", t.TempDir()), tt.flags)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				if !tt.check(cfg) {
					t.Errorf("unexpected configuration: api key set %v, database URL set %v", cfg.Auth.APIKey != "", cfg.Database.URL != "")
				}
				return
			}
			if err == nil {
				t.Fatal("Resolve succeeded, want an error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "file-key-0123456789abcdef") || strings.Contains(err.Error(), ":pw@") {
				t.Errorf("error shows a secret: %q", err)
			}
		})
	}
}
