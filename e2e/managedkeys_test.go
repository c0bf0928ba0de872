//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestManagedKeyOfAKeycloakUser: a Keycloak user makes a key in one
// request with its session cookie, uses it as a Bearer credential (as curl
// would), is demoted in the realm, and the key narrows once the user signs
// in again; then the user revokes it and it is refused.
func TestManagedKeyOfAKeycloakUser(t *testing.T) {
	needStandin(t)
	p := startIDP(t, freePort(t))
	s := startService(t, p, 0)
	s.waitReady(t, 30*time.Second)

	lead := grantRealmRole(t, p, "ivan", "lead")
	ivan := lead.userID
	status, jar, body := passwordLogin(t, s, "ivan", "ivan-pw")
	if status != http.StatusOK || !strings.Contains(body, "LEAD") {
		t.Fatalf("login: got %d %s, want 200 with LEAD", status, body)
	}
	browser := noRedirects(jar)

	req, _ := http.NewRequest(http.MethodPost, s.url+"/api/v2/keys", strings.NewReader(`{"name":"laptop script",`+
		`"permissions":["me:read","sessions:read","sessions:team"],"expires_at":"`+time.Now().Add(24*time.Hour).UTC().Format(time.RFC3339)+`"}`))
	req.Header.Set("Content-Type", "application/json")
	status, body = do(t, browser, req)
	var made struct{ ID, Key string }
	if err := json.Unmarshal([]byte(body), &made); status != http.StatusCreated || err != nil || !strings.HasPrefix(made.Key, "aak_") {
		t.Fatalf("POST /api/v2/keys with the session cookie = %d %s", status, body)
	}

	permissions := func() (int, []string) {
		status, body := get(t, noRedirects(nil), s.url+"/api/v2/me", made.Key)
		var m struct {
			Subject     string   `json:"subject"`
			Method      string   `json:"method"`
			Permissions []string `json:"permissions"`
		}
		_ = json.Unmarshal([]byte(body), &m)
		if status == http.StatusOK && (m.Method != "managed_key" || m.Subject != ivan) {
			t.Errorf("/me with the key: %s", body)
		}
		return status, m.Permissions
	}
	if status, perms := permissions(); status != http.StatusOK || !slices.Equal(perms, []string{"me:read", "sessions:read", "sessions:team"}) {
		t.Fatalf("/me with the key = %d %v, want the three permissions asked", status, perms)
	}

	lead.revoke(t)
	status, jar, body = passwordLogin(t, s, "ivan", "ivan-pw")
	if status != http.StatusOK || strings.Contains(body, "LEAD") {
		t.Fatalf("login after the demotion: got %d %s, want 200 without LEAD", status, body)
	}
	if status, _ := whoami(t, noRedirects(jar), s, ""); status != http.StatusOK { // the first request of the new session
		t.Fatalf("/me with the new session: %d", status)
	}
	if status, perms := permissions(); status != http.StatusOK || !slices.Equal(perms, []string{"me:read", "sessions:read"}) {
		t.Errorf("/me with the key after the demotion = %d %v, want sessions:team gone", status, perms)
	}

	req, _ = http.NewRequest(http.MethodDelete, s.url+"/api/v2/keys/"+made.ID, nil)
	if status, body := do(t, noRedirects(jar), req); status != http.StatusNoContent {
		t.Fatalf("DELETE /api/v2/keys/%s = %d %s", made.ID, status, body)
	}
	status, body = get(t, noRedirects(nil), s.url+"/api/v2/me", made.Key)
	if status != http.StatusUnauthorized || !strings.Contains(body, "key_revoked") {
		t.Errorf("the revoked key = %d %s, want 401 key_revoked", status, body)
	}
}
