package mcpproxy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/domain"
)

// TestCredentials: a server's credential is its file's content; a server
// whose upstream authorizes each person has none of the gateway's, and
// asking for one fails rather than answering none.
func TestCredentials(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fs-token"), []byte("fs-secret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cc := NewCredentials(dir)
	tests := []struct {
		name    string
		sv      domain.Server
		want    string
		wantErr string
	}{
		{"a file", domain.Server{Name: "fs", Credential: "fs-token"}, "fs-secret-value", ""},
		{"none", domain.Server{Name: "open"}, "", ""},
		{"a missing file", domain.Server{Name: "gone", Credential: "gone-token"}, "", "gone-token"},
		{"per person", domain.Server{Name: "gh", UpstreamAuth: &domain.UpstreamAuth{Type: domain.UpstreamOAuth2, ClientID: "c"}}, "", "upstream_auth oauth2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cc.Credential(t.Context(), tt.sv)
			if got != tt.want || (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Credential = %q, %v; want %q, error with %q", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
