package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestHybridModeProcesses runs two agentauth processes as users do: a
// central one in debug mode and a local one in hybrid mode configured only
// by SERVICE_HYBRID_* variables.
func TestHybridModeProcesses(t *testing.T) {
	centre := start(t, baseEnv(t.TempDir(), "SERVICE_AUTH_DEBUG=true"), "serve")
	local := start(t, baseEnv(t.TempDir(), "SERVICE_HYBRID_REMOTE_URL="+centre.URL, "SERVICE_HYBRID_CACHE_TTL=1h"), "serve")

	for _, role := range []string{"ADMIN", "USER", "LEAD", "AUDITOR"} {
		key := "debug-" + strings.ToLower(role)
		status, _, body := get(t, local.URL+"/api/v2/me", key)
		var m struct {
			Roles      []string `json:"roles"`
			Method     string   `json:"method"`
			RoleSource string   `json:"role_source"`
		}
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("%s: %d %q", key, status, body)
		}
		if status != 200 || !slices.Equal(m.Roles, []string{role}) || m.Method != "debug" || m.RoleSource != "remote "+centre.URL {
			t.Errorf("%s: got %d %+v, want 200 roles [%s] method debug (a debug key stays one) role_source %q", key, status, m, role, "remote "+centre.URL)
		}
	}
	if status, _, _ := get(t, local.URL+"/api/v2/me", "not-a-key"); status != 401 {
		t.Errorf("credential the centre rejects: got %d, want 401", status)
	}
	if code := stop(t, centre); code != exitOK {
		t.Fatalf("centre exit: got %d, want %d", code, exitOK)
	}
	if status, _, body := get(t, local.URL+"/api/v2/me", "debug-typo"); status != 503 {
		t.Errorf("centre stopped: got %d %s, want 503", status, body)
	}
	// Cached within the hour: the edge keeps serving the answers it has.
	if status, _, _ := get(t, local.URL+"/api/v2/me", "debug-admin"); status != 200 {
		t.Errorf("cached answer, centre stopped: got %d, want 200", status)
	}
	if code := stop(t, local); code != exitOK {
		t.Errorf("local exit: got %d, want %d", code, exitOK)
	}
	if !strings.Contains(local.Stderr(), "hybrid mode") {
		t.Errorf("the log does not say hybrid mode is on:\n%s", local.Stderr())
	}
}

func TestHybridModeRefusesLocalRoles(t *testing.T) {
	dir := t.TempDir()
	remote := "SERVICE_HYBRID_REMOTE_URL=https://centre.example"
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{"with an API key", []string{remote, "SERVICE_API_KEY=0123456789abcdef0123"}, []string{"SERVICE_HYBRID_REMOTE_URL", "SERVICE_API_KEY"}},
		{"with debug", []string{remote, "SERVICE_AUTH_DEBUG=true"}, []string{"SERVICE_AUTH_DEBUG"}},
		{"plain http to another host", []string{"SERVICE_HYBRID_REMOTE_URL=http://centre.example"}, []string{"SERVICE_HYBRID_REMOTE_URL", "https"}},
		{"bad cache time", []string{remote, "SERVICE_HYBRID_CACHE_TTL=soon"}, []string{"SERVICE_HYBRID_CACHE_TTL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := runToEnd(t, baseEnv(dir, tt.env...), "serve")
			if code != exitUsage {
				t.Errorf("exit: got %d, want %d\n%s", code, exitUsage, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not name %q:\n%s", w, out)
				}
			}
		})
	}
}
