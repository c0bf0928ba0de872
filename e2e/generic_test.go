//go:build e2e

package e2e

import (
	"net/http"
	"slices"
	"testing"
)

// TestGenericProvider: with auth.oidc.provider generic the service talks to
// the provider only through its discovery document (password grant at the
// token endpoint, logout by revocation) and takes roles from
// auth.oidc.rolesClaim alone: with realm_access.roles, henry's client role
// LEAD is not read (USER) while alice's realm role gives ADMIN.
func TestGenericProvider(t *testing.T) {
	p := keycloak(t)
	s := startService(t, p, 0, "SERVICE_OIDC_PROVIDER=generic", "SERVICE_OIDC_ROLES_CLAIM=realm_access.roles")
	s.waitReady(t)
	for _, tc := range []struct {
		user, password, want string
	}{
		{"alice", "alice-pw", "ADMIN"},
		{"henry", "henry-pw", "USER"},
	} {
		status, jar, body := passwordLogin(t, s, tc.user, tc.password)
		if status != http.StatusOK {
			t.Fatalf("%s: password login: %d %s", tc.user, status, body)
		}
		c := noRedirects(jar)
		if st, m := whoami(t, c, s, ""); st != http.StatusOK || !slices.Equal(m.Roles, []string{tc.want}) {
			t.Errorf("%s: %d %+v, want [%s]", tc.user, st, m, tc.want)
		}
		tok := grant(t, p, realmName, clientID, clientSecret, tc.user, tc.password)
		if st, m := whoami(t, noRedirects(nil), s, tok.AccessToken); st != http.StatusOK || !slices.Equal(m.Roles, []string{tc.want}) {
			t.Errorf("%s Bearer: %d %+v, want [%s]", tc.user, st, m, tc.want)
		}
		req, _ := http.NewRequest(http.MethodPost, s.url+"/auth/logout", nil)
		if st, body := do(t, c, req); st != http.StatusOK {
			t.Errorf("%s: logout: %d %s", tc.user, st, body)
		}
		if st, _ := whoami(t, c, s, ""); st != http.StatusUnauthorized {
			t.Errorf("%s after logout: %d, want 401", tc.user, st)
		}
	}
	if status, _, _ := passwordLogin(t, s, "alice", "wrong"); status != http.StatusUnauthorized {
		t.Errorf("wrong password: %d, want 401", status)
	}
}
