//go:build e2e

package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestAdditionalIssuers: with Keycloak's master realm configured as a
// second trusted issuer (auth.oidc.additionalIssuers, with a client of its
// own made here: master's admin-cli issues lightweight access tokens, with
// neither sub nor roles), its access tokens are accepted as Bearer tokens with roles extracted the
// same way (master's admin holds realm role admin: ADMIN), the primary
// realm's tokens still work, and a service without that setting refuses
// the same token (an issuer not configured: 401).
func TestAdditionalIssuers(t *testing.T) {
	p := keycloak(t)
	createClient(t, p, "master", "agentauth-master", "")
	cfgFile := filepath.Join(t.TempDir(), "agentauth.yaml")
	if err := os.WriteFile(cfgFile, []byte("auth:\n  oidc:\n    additionalIssuers:\n      - issuer: "+p.base+"/realms/master\n        clientId: agentauth-master\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withSecond := startService(t, p, 0, "SERVICE_CONFIG="+cfgFile)
	primaryOnly := startService(t, p, 0)
	withSecond.waitReady(t)
	primaryOnly.waitReady(t)

	machine := grant(t, p, "master", "agentauth-master", "agentauth-master-e2e-secret", kcAdmin, kcAdminPassword)
	status, m := whoami(t, noRedirects(nil), withSecond, machine.AccessToken)
	if status != http.StatusOK || m.Method != "oidc" || !slices.Contains(m.Roles, "ADMIN") {
		t.Errorf("second realm's token with additionalIssuers: %d %+v, want 200 ADMIN by OIDC", status, m)
	}
	user := grant(t, p, realmName, clientID, clientSecret, "erin", "erin-pw")
	if status, m := whoami(t, noRedirects(nil), withSecond, user.AccessToken); status != http.StatusOK || !slices.Contains(m.Roles, "USER") {
		t.Errorf("primary realm's token: %d %+v, want 200 USER", status, m)
	}
	if status, _ := whoami(t, noRedirects(nil), primaryOnly, machine.AccessToken); status != http.StatusUnauthorized {
		t.Errorf("second realm's token without additionalIssuers: %d, want 401", status)
	}
	// Logins stay on the primary issuer: master's admin cannot log in.
	if status, _, body := passwordLogin(t, withSecond, "admin", "admin"); status != http.StatusUnauthorized {
		t.Errorf("password login of the second realm's user: %d %s, want 401", status, body)
	}
}
