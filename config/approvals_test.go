package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApprovalsSettings: the approvals webhook needs its URL and a
// Standard Webhooks secret together, from the file or the environment, not
// both; each problem names its setting.
func TestApprovalsSettings(t *testing.T) {
	dir := t.TempDir()
	const good = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // 24 bytes
	file := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secret := file("secret", good+"\n", 0o600)
	tests := []struct {
		name string
		env  map[string]string
		want string // "" valid, else a part of the error
	}{
		{"off", nil, ""},
		{"URL and secret file", map[string]string{"SERVICE_APPROVALS_WEBHOOK_URL": "https://hooks.example.com/T0/B0/x", "SERVICE_APPROVALS_WEBHOOK_SECRET_FILE": secret}, ""},
		{"URL and secret", map[string]string{"SERVICE_APPROVALS_WEBHOOK_URL": "http://127.0.0.1:9/hook", "SERVICE_APPROVALS_WEBHOOK_SECRET": good}, ""},
		{"URL without secret", map[string]string{"SERVICE_APPROVALS_WEBHOOK_URL": "https://hooks.example.com/x"}, "approvals.webhookSecretFile / SERVICE_APPROVALS_WEBHOOK_SECRET_FILE (or SERVICE_APPROVALS_WEBHOOK_SECRET): required"},
		{"secret without URL", map[string]string{"SERVICE_APPROVALS_WEBHOOK_SECRET_FILE": secret}, "without approvals.webhookURL"},
		{"both secrets", map[string]string{"SERVICE_APPROVALS_WEBHOOK_URL": "https://h.example.com/x", "SERVICE_APPROVALS_WEBHOOK_SECRET_FILE": secret,
			"SERVICE_APPROVALS_WEBHOOK_SECRET": good}, "are both set"},
		{"not whsec_", map[string]string{"SERVICE_APPROVALS_WEBHOOK_URL": "https://h.example.com/x", "SERVICE_APPROVALS_WEBHOOK_SECRET": "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "want whsec_"},
		{"too short", map[string]string{"SERVICE_APPROVALS_WEBHOOK_URL": "https://h.example.com/x", "SERVICE_APPROVALS_WEBHOOK_SECRET": "whsec_c2hvcnQ="}, "24 to 64"},
		{"not a URL", map[string]string{"SERVICE_APPROVALS_WEBHOOK_URL": "hooks.example.com/x", "SERVICE_APPROVALS_WEBHOOK_SECRET": good}, "approvals.webhookURL / SERVICE_APPROVALS_WEBHOOK_URL"},
		{"user information", map[string]string{"SERVICE_APPROVALS_WEBHOOK_URL": "https://u:p@h.example.com/x", "SERVICE_APPROVALS_WEBHOOK_SECRET": good}, "approvals.webhookURL"},
		{"a file others read", map[string]string{"SERVICE_APPROVALS_WEBHOOK_URL": "https://h.example.com/x", "SERVICE_APPROVALS_WEBHOOK_SECRET_FILE": file("open", good, 0o644)},
			"approvals.webhookSecretFile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"SERVICE_DATA_DIR": dir}
			for k, v := range tt.env {
				env[k] = v
			}
			c, err := Resolve("", env, nil)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("%v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("%v, want an error naming %q", err, tt.want)
			case tt.want == "" && tt.env["SERVICE_APPROVALS_WEBHOOK_URL"] != "" && c.Approvals.WebhookSecret != good:
				t.Errorf("secret %q, want the file's or variable's, trimmed", c.Approvals.WebhookSecret)
			}
		})
	}
}
