//go:build e2e

package e2e

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestManagedKeyOfAKeycloakUser: a Keycloak user makes a key in one
// request with its session cookie, uses it as a Bearer credential (as curl
// would), is demoted in the realm, and the key narrows once the user signs
// in again; then the user revokes it and it is refused. (The narrowing at
// a refresh: TestRefreshAndRoleRemoval.)
func TestManagedKeyOfAKeycloakUser(t *testing.T) {
	p := keycloak(t)
	s := startService(t, p, 0)
	s.waitReady(t)

	lead := grantRealmRole(t, p, "ivan", "lead")
	status, jar, body := passwordLogin(t, s, "ivan", "ivan-pw")
	if status != http.StatusOK || !strings.Contains(body, "LEAD") {
		t.Fatalf("login: got %d %s, want 200 with LEAD", status, body)
	}
	key := makeKey(t, s, noRedirects(jar), "me:read", "sessions:read", "sessions:team")
	status, m := whoami(t, noRedirects(nil), s, key.Key)
	if status != http.StatusOK || m.Subject != lead.userID {
		t.Fatalf("/me with the key = %d %+v, want ivan (%s)", status, m, lead.userID)
	}
	if status, perms := keyPermissions(t, s, key); status != http.StatusOK || !slices.Equal(perms, []string{"me:read", "sessions:read", "sessions:team"}) {
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
	if status, perms := keyPermissions(t, s, key); status != http.StatusOK || !slices.Equal(perms, []string{"me:read", "sessions:read"}) {
		t.Errorf("/me with the key after the demotion = %d %v, want sessions:team gone", status, perms)
	}

	req, _ := http.NewRequest(http.MethodDelete, s.url+"/api/v2/keys/"+key.ID, nil)
	if status, body := do(t, noRedirects(jar), req); status != http.StatusNoContent {
		t.Fatalf("DELETE /api/v2/keys/%s = %d %s", key.ID, status, body)
	}
	status, body = get(t, noRedirects(nil), s.url+"/api/v2/me", key.Key)
	if status != http.StatusUnauthorized || !strings.Contains(body, "key_revoked") {
		t.Errorf("the revoked key = %d %s, want 401 key_revoked", status, body)
	}
}
