//go:build e2e

package e2e

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
)

// TestCluster runs two agentauth instances in OIDC mode that share one
// PostgreSQL database (a fresh schema), as replicas behind a load balancer
// would, and checks that what users rely on holds across them: a login on
// one is a login on both, a logout on one ends the session on both at once,
// and the password-login limit counts failures made on either.
func TestCluster(t *testing.T) {
	dbURL := pgtest.URL(t)
	p := startIDP(t, 0)
	env := []string{
		"SERVICE_DATABASE_URL=" + dbURL,
		"SERVICE_OIDC_LOGIN_FAILURES=3",
		"SERVICE_OIDC_LOGIN_WINDOW=10m",
	}
	a := startService(t, p, 0, env...)
	b := startService(t, p, 0, env...)
	a.waitReady(t, 30*time.Second)
	b.waitReady(t, 30*time.Second)

	t.Run("login on A works on B; logout on B is refused on A at once", func(t *testing.T) {
		status, jar, body := passwordLogin(t, a, "bob", "bob-pw")
		if status != http.StatusOK {
			t.Fatalf("POST /auth/login on A: %d %s", status, body)
		}
		c := noRedirects(jar) // cookies are per host, not port: the jar serves A and B alike
		statusA, onA := whoami(t, c, a, "")
		statusB, onB := whoami(t, c, b, "")
		if statusA != http.StatusOK || statusB != http.StatusOK {
			t.Fatalf("GET /api/v2/me with A's cookie: A %d, B %d; want 200 on both", statusA, statusB)
		}
		if onA.Subject == "" || onB.Subject != onA.Subject || onB.Method != "oidc" {
			t.Errorf("B sees %+v, A sees %+v; want the same OIDC subject", onB, onA)
		}

		u, _ := url.Parse(a.url)
		oldJar := newJar(t)
		oldJar.SetCookies(u, jar.Cookies(u))
		req, _ := http.NewRequest(http.MethodPost, b.url+"/auth/logout", nil)
		if status, body := do(t, c, req); status != http.StatusOK {
			t.Fatalf("POST /auth/logout on B: %d %s", status, body)
		}
		// The very next request on A, with the cookie from before the logout.
		if status, _ := whoami(t, noRedirects(oldJar), a, ""); status != http.StatusUnauthorized {
			t.Errorf("A after logout on B: got %d, want 401", status)
		}
		if status, _ := whoami(t, noRedirects(oldJar), b, ""); status != http.StatusUnauthorized {
			t.Errorf("B after its own logout: got %d, want 401", status)
		}
	})

	t.Run("password-login limit holds across instances", func(t *testing.T) {
		// Three failures spread over A and B reach the limit of 3 for erin.
		for i, s := range []*service{a, b, a} {
			if status, _, body := passwordLogin(t, s, "erin", "wrong-password"); status != http.StatusUnauthorized {
				t.Fatalf("failure %d on %s: got %d %s, want 401", i+1, s.url, status, body)
			}
		}
		// Now even the right password is refused, on either instance.
		for _, s := range []*service{b, a} {
			if status, _, body := passwordLogin(t, s, "erin", "erin-pw"); status != http.StatusTooManyRequests {
				t.Errorf("login on %s after 3 failures elsewhere: got %d %s, want 429", s.url, status, body)
			}
		}
		// Another user is not held back by erin's failures.
		if status, _, body := passwordLogin(t, b, "bob", "bob-pw"); status != http.StatusOK {
			t.Errorf("bob on B: got %d %s, want 200", status, body)
		}
	})
}
