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
			cfg.Database.URL, cfg.Audit.SigningKey = tt.url, testAuditKey
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

// testAuditKey is an audit signing key (a seed in base64url).
const testAuditKey = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"

// TestPostgresModeNeedsTheAuditSigningKey: instances on one database sign
// one checkpoint chain, so PostgreSQL mode needs the one key configured;
// a key each instance creates for itself stops start, listed with every
// other problem, naming the settings.
func TestPostgresModeNeedsTheAuditSigningKey(t *testing.T) {
	tests := []struct {
		name    string
		url     string
		key     string
		keyFile string
		wantErr bool
	}{
		{"SQLite creates its key", "", "", "", false},
		{"PostgreSQL without a key", "postgres://agentauth@db/agentauth", "", "", true},
		{"PostgreSQL with SERVICE_AUDIT_SIGNING_KEY", "postgres://agentauth@db/agentauth", testAuditKey, "", false},
		// Resolve reads the file into the key, or reports the file.
		{"PostgreSQL with audit.signingKeyFile", "postgres://agentauth@db/agentauth", testAuditKey, "/run/secrets/audit", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.Database.URL, cfg.Audit.SigningKey, cfg.Audit.SigningKeyFile = tt.url, tt.key, tt.keyFile
			cfg.Log.Level = "loud" // another problem, reported with it
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), "log.level") {
				t.Fatalf("Validate() = %v, want the log.level problem", err)
			}
			named := strings.Contains(err.Error(), "audit.signingKeyFile") && strings.Contains(err.Error(), "SERVICE_AUDIT_SIGNING_KEY") &&
				strings.Contains(err.Error(), "database.url")
			if named != tt.wantErr {
				t.Errorf("Validate() = %v; want the audit signing key required: %v", err, tt.wantErr)
			}
		})
	}
}
