package wire_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/wire"
)

// TestCustomRoleKey serves API-key mode with a custom role from auth.roles
// and a key for it from auth.keys: the key gets exactly its role's rights,
// and the ADMIN key keeps working.
func TestCustomRoleKey(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "secops.key")
	const secopsKey = "secops-key-0123456789"
	if err := os.WriteFile(keyFile, []byte(secopsKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "agentauth.yaml")
	if err := os.WriteFile(cfgFile, []byte(`auth:
  roles:
    - name: SECOPS
      extends: AUDITOR
      permissions: [policies:write]
  keys:
    - subject: sec-bot
      role: SECOPS
      keyFile: `+keyFile+`
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgFile, map[string]string{"SERVICE_API_KEY": clusterKey, "SERVICE_DATA_DIR": filepath.Join(dir, "data")})
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	srv, cleanup, err := wire.APIKey(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		cleanup()
	}()
	base := "http://" + ln.Addr().String()
	tests := []struct {
		key, method, path, body string
		want                    int
		wantIn                  string
	}{
		{secopsKey, "GET", "/api/v2/me", "", 200, `"subject":"key:sec-bot"`},
		{secopsKey, "POST", "/api/v2/policies", `{"effect":"deny","tool":"shell.*","scope":"role","value":"USER"}`, 201, `"created_by":"key:sec-bot"`},
		{secopsKey, "GET", "/api/v2/audit/verify", "", 200, `"ok":true`},
		{secopsKey, "PUT", "/api/v2/admin/settings", `{"security_gateway":true,"default_session_mode":"ask"}`, 403, `role SECOPS lacks settings:write`},
		{secopsKey, "POST", "/api/v2/sessions", `{"title":"x"}`, 403, `role SECOPS lacks sessions:write`},
		{clusterKey, "GET", "/api/v2/policies", "", 200, `shell.*`},
		{"not-a-key-not-a-key", "GET", "/api/v2/me", "", 401, ""},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, base+tt.path, strings.NewReader(tt.body))
		req.Header.Set("Authorization", "Bearer "+tt.key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tt.want || !strings.Contains(string(b), tt.wantIn) {
			t.Errorf("%s %s: got %d %s, want %d with %q", tt.method, tt.path, res.StatusCode, b, tt.want, tt.wantIn)
		}
	}
}
