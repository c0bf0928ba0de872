package hybrid_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/wire"
)

// TestHybridManagedKeyStaysNarrow: a managed key is the centre's; used at
// a hybrid edge it acts for its owner within the key's scopes there too,
// never with all of its owner's roles.
func TestHybridManagedKeyStaysNarrow(t *testing.T) {
	const serviceKey = "centre-service-key-0123456789"
	centre := start(t, wire.APIKey, func(c *config.Config) { c.Auth.APIKey = serviceKey })
	local := startLocal(t, centre.url, time.Hour, 0)
	body, _ := json.Marshal(map[string]any{"name": "edge", "permissions": []string{"me:read", "sessions:read"},
		"expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	req, _ := http.NewRequest(http.MethodPost, centre.url+"/api/v2/keys", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+serviceKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var made struct{ Key string }
	_ = json.NewDecoder(resp.Body).Decode(&made)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || made.Key == "" {
		t.Fatalf("POST /api/v2/keys at the centre = %d", resp.StatusCode)
	}
	auth := "Bearer " + made.Key
	status, me := get(t, local.url, "/api/v2/me", "Authorization", auth)
	if status != http.StatusOK || !slices.Equal(me.Roles, []string{"ADMIN"}) {
		t.Fatalf("/me at the edge = %d %+v", status, me)
	}
	for _, tc := range []struct {
		path string
		want int
	}{{"/api/v2/sessions", http.StatusOK}, {"/api/v2/audit", http.StatusForbidden}, {"/api/v2/admin/settings", http.StatusForbidden}} {
		if status, _ := get(t, local.url, tc.path, "Authorization", auth); status != tc.want {
			t.Errorf("GET %s at the edge with the key = %d, want %d", tc.path, status, tc.want)
		}
	}
	if status, _ := get(t, local.url, "/api/v2/keys", "Authorization", auth); status != http.StatusNotFound {
		t.Errorf("GET /api/v2/keys at the edge = %d, want 404 (keys are the centre's)", status)
	}
}
