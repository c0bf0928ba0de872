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
			cfg.Database.URL = tt.url
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
