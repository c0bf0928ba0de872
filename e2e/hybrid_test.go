//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
)

// TestHybridBehindOIDCCentre runs a central agentauth in OIDC mode and a
// local one in hybrid mode pointing at it: a browser's user_session cookie
// and a Bearer access token, both issued for the centre, carry the roles the
// identity provider assigned through to the local instance.
func TestHybridBehindOIDCCentre(t *testing.T) {
	p := keycloak(t)
	centre := startService(t, p, p.servicePort)
	centre.waitReady(t)
	local := startHybrid(t, centre.url)

	t.Run("session cookie", func(t *testing.T) {
		for _, tt := range []struct{ user, want string }{{"alice", "ADMIN"}, {"carol", "LEAD"}, {"dave", "AUDITOR"}} {
			status, jar, body := passwordLogin(t, centre, tt.user, tt.user+"-pw")
			if status != http.StatusOK {
				t.Fatalf("%s: login at the centre: got %d %s, want 200", tt.user, status, body)
			}
			u, _ := url.Parse(centre.url)
			var session string
			for _, c := range jar.Cookies(u) {
				if c.Name == "user_session" {
					session = c.Value
				}
			}
			if session == "" {
				t.Fatalf("%s: the centre set no user_session cookie", tt.user)
			}
			req, _ := http.NewRequest(http.MethodGet, local.url+"/api/v2/me", nil)
			req.AddCookie(&http.Cookie{Name: "user_session", Value: session})
			status, m := meOf(t, req)
			if status != http.StatusOK || !slices.Equal(m.Roles, []string{tt.want}) || m.Method != "hybrid" || m.RoleSource != "remote "+centre.url {
				t.Errorf("%s at the edge with the centre's cookie: got %d %+v, want 200 [%s] hybrid from the centre", tt.user, status, m, tt.want)
			}
		}
	})
	t.Run("bearer access token", func(t *testing.T) {
		tok := grant(t, p, realmName, clientID, clientSecret, "henry", "henry-pw")
		status, m := whoami(t, noRedirects(nil), local, tok.AccessToken)
		if status != http.StatusOK || !slices.Equal(m.Roles, []string{"LEAD"}) || m.Method != "hybrid" {
			t.Errorf("henry's access token at the edge: got %d %+v, want 200 [LEAD] hybrid", status, m)
		}
	})
	t.Run("forged cookie", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, local.url+"/api/v2/me", nil)
		req.AddCookie(&http.Cookie{Name: "user_session", Value: "not-a-session"})
		if status, _ := meOf(t, req); status != http.StatusUnauthorized {
			t.Errorf("cookie the centre does not know: got %d, want 401", status)
		}
	})
}

func meOf(t *testing.T, req *http.Request) (int, me) {
	t.Helper()
	status, body := do(t, noRedirects(nil), req)
	var m me
	if status == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("/api/v2/me body %q: %v", body, err)
		}
	}
	return status, m
}

// startHybrid runs agentauth in hybrid mode against the centre.
func startHybrid(t *testing.T, centre string) *service {
	t.Helper()
	return startAgentauth(t, "agentauth-hybrid", "SERVICE_HYBRID_REMOTE_URL="+centre)
}
