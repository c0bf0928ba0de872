//go:build e2e

package e2e

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
)

// TestCluster runs two agentauth instances in OIDC mode that share one
// PostgreSQL database (a fresh schema), as replicas behind a load balancer
// would, and checks that what users rely on holds across them: a login on
// one is a login on both, a logout on one ends the session on both at once,
// the password-login limit counts failures made on either, and the audit
// records both write under concurrent load form one unbroken chain holding
// every answered request.
const clusterKey = "e2e-cluster-api-key-0123456789abcdef"

func TestCluster(t *testing.T) {
	dbURL := pgtest.URL(t)
	p := keycloak(t)
	env := []string{
		"SERVICE_DATABASE_URL=" + dbURL,
		"SERVICE_OIDC_LOGIN_FAILURES=3",
		"SERVICE_OIDC_LOGIN_WINDOW=10m",
		"SERVICE_API_KEY=" + clusterKey, // for the audit part: accepted alongside OIDC
		// Replicas sign audit checkpoints, and agent tokens, with one key each, as from one Secret.
		"SERVICE_AUDIT_SIGNING_KEY_FILE=" + sharedSigningKey(t),
		"SERVICE_AGENT_TOKENS_SIGNING_KEY_FILE=" + sharedSigningKey(t),
	}
	a := startService(t, p, 0, env...)
	b := startService(t, p, 0, env...)
	a.waitReady(t)
	b.waitReady(t)

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

	t.Run("audit records of both instances form one chain with nothing lost", func(t *testing.T) {
		const workers, perWorker = 6, 30
		var (
			mu  sync.Mutex
			ids = map[string]int{}
			wg  sync.WaitGroup
		)
		client := &http.Client{Timeout: 15 * time.Second}
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < perWorker; i++ {
					s := []*service{a, b}[(w+i)%2]
					key, want := clusterKey, http.StatusOK
					if i%4 == 3 {
						key, want = "not-the-key-not-the-key-00", http.StatusUnauthorized
					}
					req, _ := http.NewRequest(http.MethodGet, s.url+"/api/v2/me", nil)
					req.Header.Set("Authorization", "Bearer "+key)
					resp, err := client.Do(req)
					if err != nil {
						t.Errorf("GET /api/v2/me: %v", err)
						return
					}
					resp.Body.Close()
					id := resp.Header.Get("X-Request-ID")
					if resp.StatusCode != want || id == "" {
						t.Errorf("GET /api/v2/me on %s = %d (request id %q), want %d", s.url, resp.StatusCode, id, want)
						continue
					}
					mu.Lock()
					ids[id] = resp.StatusCode
					mu.Unlock()
				}
			}(w)
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}

		// Either instance sees the whole chain; ask B to verify it and A to export it.
		status, body := get(t, noRedirects(nil), b.url+"/api/v2/audit/verify", clusterKey)
		var verdict struct {
			OK      bool `json:"ok"`
			Checked int  `json:"checked"`
		}
		if status != http.StatusOK || json.Unmarshal([]byte(body), &verdict) != nil || !verdict.OK {
			t.Fatalf("GET /api/v2/audit/verify on B = %d %s, want 200 with ok:true", status, body)
		}
		status, body = get(t, noRedirects(nil), a.url+"/api/v2/audit/export", clusterKey)
		if status != http.StatusOK {
			t.Fatalf("GET /api/v2/audit/export on A = %d %s", status, body)
		}
		exported := map[string]int{}
		var lastSeq int64
		sc := bufio.NewScanner(strings.NewReader(body))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var r struct {
				Seq       int64  `json:"seq"`
				RequestID string `json:"request_id"`
				Status    int    `json:"status"`
			}
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("export line %q: %v", sc.Text(), err)
			}
			if r.Seq != lastSeq+1 {
				t.Fatalf("export: seq %d follows %d (a gap or a fork)", r.Seq, lastSeq)
			}
			lastSeq = r.Seq
			exported[r.RequestID] = r.Status
		}
		missing := 0
		for id, status := range ids {
			got, ok := exported[id]
			switch {
			case !ok:
				missing++
			case got != status:
				t.Errorf("record of %s has status %d, want the answered %d", id, got, status)
			}
		}
		if missing > 0 {
			t.Errorf("%d of %d answered requests are missing from the audit log", missing, len(ids))
		}
		if int64(verdict.Checked) < int64(len(ids)) {
			t.Errorf("verify checked %d records, fewer than the %d requests answered", verdict.Checked, len(ids))
		}
		t.Logf("%d requests over 2 processes; chain of %d records verified", len(ids), lastSeq)
	})
}

// sharedSigningKey writes a signing key (an Ed25519 seed in base64url,
// owner-only) for the instances of a cluster to share.
func sharedSigningKey(t *testing.T) string {
	t.Helper()
	seed := make([]byte, 32)
	if _, err := rand.Read(seed); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit-signing.key")
	if err := os.WriteFile(path, []byte(base64.RawURLEncoding.EncodeToString(seed)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
