package config

import (
	"strings"
	"testing"
)

func TestValidateDatabaseURL(t *testing.T) {
	tests := []struct {
		name    string
		url     string
		wantErr bool
	}{
		{"empty selects SQLite", "", false},
		{"postgres URL", "postgres://agentauth:pw@db.internal:5432/agentauth?sslmode=verify-full", false},
		{"postgresql scheme", "postgresql://agentauth@db/agentauth", false},
		{"keyword form", "host=db.internal port=5432 dbname=agentauth user=agentauth sslmode=require", false},
		{"pool size parameter", "postgres://agentauth@db/agentauth?pool_max_conns=20", false},
		{"mysql URL", "mysql://root:hunter2@db/agentauth", true},
		{"a bare path", "/var/lib/agentauth/db.sqlite", true},
		{"bad port", "postgres://agentauth:hunter2@db:notaport/agentauth", true},
		{"bad pool size", "postgres://agentauth:hunter2@db/agentauth?pool_max_conns=lots", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.Database.URL, cfg.Audit.SigningKey, cfg.Auth.AgentTokens.SigningKey = tt.url, testAuditKey, testAgentKey
			err := cfg.Validate()
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("Validate() with database.url %q = %v, want error: %v", tt.url, err, tt.wantErr)
			}
			if err == nil {
				return
			}
			if !strings.Contains(err.Error(), "SERVICE_DATABASE_URL") {
				t.Errorf("error %q does not name SERVICE_DATABASE_URL", err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

// testAuditKey and testAgentKey are signing keys (seeds in base64url).
const (
	testAuditKey = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
	testAgentKey = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8"
)

// TestPostgresModeNeedsTheSigningKeys: instances on one database sign one
// audit checkpoint chain, and every instance verifies the agent tokens
// any of them minted, so PostgreSQL mode needs both keys configured; a key
// each instance would create for itself stops start, listed with every
// other problem, naming the settings.
func TestPostgresModeNeedsTheSigningKeys(t *testing.T) {
	const pg = "postgres://agentauth@db/agentauth"
	auditNames := []string{"audit.signingKeyFile", "SERVICE_AUDIT_SIGNING_KEY", "database.url"}
	agentNames := []string{"auth.agentTokens.signingKeyFile", "SERVICE_AGENT_TOKENS_SIGNING_KEY_FILE",
		"--agent-tokens-signing-key-file", "SERVICE_AGENT_TOKENS_SIGNING_KEY)", "database.url", "basenc --base64url"}
	tests := []struct {
		name      string
		url       string
		auditKey  string
		auditFile string
		agentKey  string
		agentFile string
		want      [][]string // the settings reported missing
	}{
		{"SQLite creates its keys", "", "", "", "", "", nil},
		{"PostgreSQL without keys", pg, "", "", "", "", [][]string{auditNames, agentNames}},
		{"PostgreSQL without the audit key", pg, "", "", testAgentKey, "", [][]string{auditNames}},
		{"PostgreSQL without the agent-token key", pg, testAuditKey, "", "", "", [][]string{agentNames}},
		{"PostgreSQL with both keys from the environment", pg, testAuditKey, "", testAgentKey, "", nil},
		// Resolve reads a file into its key, or reports the file.
		{"PostgreSQL with both key files", pg, testAuditKey, "/run/secrets/audit", testAgentKey, "/run/secrets/agent", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.Database.URL = tt.url
			cfg.Audit.SigningKey, cfg.Audit.SigningKeyFile = tt.auditKey, tt.auditFile
			cfg.Auth.AgentTokens.SigningKey, cfg.Auth.AgentTokens.SigningKeyFile = tt.agentKey, tt.agentFile
			cfg.Log.Level = "loud" // another problem, reported with them
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), "log.level") {
				t.Fatalf("Validate() = %v, want the log.level problem", err)
			}
			problems := strings.Split(err.Error(), "\n")
			if want := 1 + len(tt.want); len(problems) != want {
				t.Errorf("Validate() reported %d problems, want %d:\n%v", len(problems), want, err)
			}
			for _, names := range tt.want {
				for _, n := range names {
					if !strings.Contains(err.Error(), n) {
						t.Errorf("Validate() = %v; does not name %s", err, n)
					}
				}
			}
		})
	}
}
