package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPolicyCan(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "agentauth.yaml")
	if err := os.WriteFile(cfgFile, []byte(`auth:
  roles:
    - name: SECOPS
      extends: auditor
      permissions: [policies:write]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("auth:\n  roles:\n    - name: X\n      permissions: [nope:x]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantCode int
		wantOut  string
	}{
		{"user may not write policies", []string{"--role", "USER", "--action", "write", "--resource", "policies"}, nil, 1, "deny: role USER lacks policies:write"},
		{"admin may", []string{"--role", "ADMIN", "--action", "write", "--resource", "policies"}, nil, 0, "allow: role ADMIN grants policies:write"},
		{"lower case accepted", []string{"--role", "lead", "--action", "read", "--resource", "dashboard"}, nil, 0, "allow: role LEAD grants dashboard:read"},
		{"auditor never writes sessions", []string{"--role", "AUDITOR", "--action", "write", "--resource", "sessions"}, nil, 1, "deny: role AUDITOR lacks sessions:write"},
		{"custom role from --config", []string{"--role", "SECOPS", "--action", "write", "--resource", "policies", "--config", cfgFile}, nil, 0, "allow: role SECOPS grants policies:write"},
		{"custom role inherits", []string{"--role", "SECOPS", "--action", "export", "--resource", "audit", "--config", cfgFile}, nil, 0, "allow: role SECOPS grants audit:export"},
		{"custom role from SERVICE_CONFIG", []string{"--role", "SECOPS", "--action", "write", "--resource", "settings"}, map[string]string{"SERVICE_CONFIG": cfgFile}, 1, "deny: role SECOPS lacks settings:write"},
		{"custom role unknown without config", []string{"--role", "SECOPS", "--action", "write", "--resource", "policies"}, nil, 2, "unknown role"},
		{"unknown permission", []string{"--role", "USER", "--action", "fly", "--resource", "policies"}, nil, 2, "known permissions"},
		{"invalid config", []string{"--role", "USER", "--action", "read", "--resource", "sessions", "--config", bad}, nil, 2, "nope:x"},
		{"missing flags", []string{"--role", "USER"}, nil, 2, "required"},
		{"action names the permission", []string{"--role", "ADMIN", "--action", "settings:read"}, nil, 0, "allow: role ADMIN grants settings:read"},
		{"permission denied", []string{"--role", "USER", "--action", "settings:read"}, nil, 1, "deny: role USER lacks settings:read"},
		{"permission and the same resource", []string{"--role", "ADMIN", "--action", "settings:read", "--resource", "settings"}, nil, 0, "allow: role ADMIN grants settings:read"},
		{"permission and another resource", []string{"--role", "ADMIN", "--action", "settings:read", "--resource", "policies"}, nil, 2, "--action settings:read names resource settings, --resource says policies"},
		{"action without resource", []string{"--role", "ADMIN", "--action", "read"}, nil, 2, "--resource is required unless --action is a permission such as settings:read"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"policy", "can"}, tt.args...), tt.env, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if code != tt.wantCode || !strings.Contains(out, tt.wantOut) {
			t.Errorf("%s: exit %d, output %q; want exit %d and %q", tt.name, code, out, tt.wantCode, tt.wantOut)
		}
	}
	var stderr bytes.Buffer
	if code := run([]string{"policy"}, nil, &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "policy can") {
		t.Errorf("bare policy: exit %d %q, want 2 and the usage", code, stderr.String())
	}
}
