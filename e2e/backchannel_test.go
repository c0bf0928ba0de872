//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
)

const backchannelKey = "e2e-backchannel-api-key-0123456789abcdef"

// TestBackchannelLogout: two instances on one PostgreSQL database; the
// realm file sends Keycloak's back-channel logouts to A (through a proxy
// of the test's on the realm's service port, which keeps what Keycloak
// sent). When an administrator signs a user out in Keycloak's admin API,
// Keycloak posts a logout token per session to A, and at once the user's
// cookie session is refused on A and B and so is a Bearer access token of
// the ended session, while another user's session lives on. A logout token
// replayed to B, or an id token posted as one, is refused 400 and ends
// nothing; every call is audited.
func TestBackchannelLogout(t *testing.T) {
	dbURL := pgtest.URL(t)
	p := keycloak(t)
	env := []string{"SERVICE_DATABASE_URL=" + dbURL, "SERVICE_API_KEY=" + backchannelKey,
		"SERVICE_AUDIT_SIGNING_KEY=YmFja2NoYW5uZWwtYXVkaXQtc2lnbmluZy1rZXktMDE",
		"SERVICE_AGENT_TOKENS_SIGNING_KEY=YmFja2NoYW5uZWwtYWdlbnQtdG9rZW4ta2V5LTAxMjM"}
	a := startService(t, p, 0, env...)
	b := startService(t, p, 0, env...)
	a.waitReady(t)
	b.waitReady(t)
	rec := recordBackchannel(t, p.servicePort, a)

	// bob: a cookie session made on B, and a Bearer token from the provider.
	status, bobJar, body := passwordLogin(t, b, "bob", "bob-pw")
	if status != http.StatusOK {
		t.Fatalf("bob's login on B: %d %s", status, body)
	}
	bobCookie := noRedirects(bobJar)
	bobBearer := grant(t, p, realmName, clientID, clientSecret, "bob", "bob-pw")
	status, aliceJar, body := passwordLogin(t, a, "alice", "alice-pw")
	if status != http.StatusOK {
		t.Fatalf("alice's login on A: %d %s", status, body)
	}
	alice := noRedirects(aliceJar)
	for _, s := range []*service{a, b} {
		if st, _ := whoami(t, bobCookie, s, ""); st != http.StatusOK {
			t.Fatalf("bob's cookie on %s before the logout: %d", s.url, st)
		}
		if st, _ := whoami(t, noRedirects(nil), s, bobBearer.AccessToken); st != http.StatusOK {
			t.Fatalf("bob's Bearer token on %s before the logout: %d", s.url, st)
		}
	}

	// An administrator signs bob out in Keycloak, which calls A back.
	logoutUser(t, p, "bob")
	sent := rec.wait(t, 2) // bob's two sessions
	for _, s := range sent {
		if s.status != http.StatusOK || s.claims["sid"] == nil || s.claims["sub"] != userID(t, p, "bob") {
			t.Errorf("back-channel logout answered %d, claims %v: want 200, a sid and bob's subject", s.status, s.claims)
		}
	}

	// At once, on both instances: bob's cookie and Bearer token refused,
	// alice untouched.
	for _, s := range []*service{a, b} {
		if st, _ := whoami(t, bobCookie, s, ""); st != http.StatusUnauthorized {
			t.Errorf("bob's cookie on %s after the back-channel logout: %d, want 401", s.url, st)
		}
		if st, _ := whoami(t, noRedirects(nil), s, bobBearer.AccessToken); st != http.StatusUnauthorized {
			t.Errorf("bob's Bearer token of the ended session on %s: %d, want 401", s.url, st)
		}
		if st, _ := whoami(t, alice, s, ""); st != http.StatusOK {
			t.Errorf("alice's cookie on %s: %d, want 200", s.url, st)
		}
	}

	// Bad logout tokens: 400 with no-store, nothing ended.
	aliceTokens := grant(t, p, realmName, clientID, clientSecret, "alice", "alice-pw")
	for _, tc := range []struct {
		name, token string
		to          *service
	}{
		{"a logout token A accepted, replayed to B", sent[0].token, b},
		{"the same token replayed to A", sent[0].token, a},
		{"an id token", aliceTokens.IDToken, a},
		{"an access token", aliceTokens.AccessToken, b},
		{"garbage", "not-a-jwt", a},
	} {
		resp, err := http.PostForm(tc.to.url+"/auth/backchannel-logout", url.Values{"logout_token": {tc.token}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(resp.Header.Get("Cache-Control"), "no-store") {
			t.Errorf("%s: %d (Cache-Control %q), want 400 no-store", tc.name, resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
	}
	for _, s := range []*service{a, b} {
		if st, _ := whoami(t, alice, s, ""); st != http.StatusOK {
			t.Errorf("alice's cookie on %s after refused logout tokens: %d, want 200", s.url, st)
		}
		if st, _ := whoami(t, noRedirects(nil), s, aliceTokens.AccessToken); st != http.StatusOK {
			t.Errorf("alice's Bearer token on %s after refused logout tokens: %d, want 200", s.url, st)
		}
	}

	// Every back-channel call is in the audit log (one chain for both).
	status, body = get(t, noRedirects(nil), a.url+"/api/v2/audit?limit=100", backchannelKey)
	if status != http.StatusOK {
		t.Fatalf("audit: %d %s", status, body)
	}
	var audit struct {
		Records []struct {
			Path   string `json:"path"`
			Status int    `json:"status"`
		} `json:"records"`
	}
	if err := json.Unmarshal([]byte(body), &audit); err != nil {
		t.Fatal(err)
	}
	counts := map[int]int{}
	for _, r := range audit.Records {
		if r.Path == "/auth/backchannel-logout" {
			counts[r.Status]++
		}
	}
	if counts[200] != 2 || counts[400] != 5 {
		t.Errorf("audited back-channel logouts by status: %v, want 2×200 and 5×400", counts)
	}
}

// backchannelRecorder is a reverse proxy to a service on the port the
// realm's back-channel logout URL names; it keeps each logout token
// Keycloak posts, with the service's answer.
type backchannelRecorder struct {
	mu   sync.Mutex
	sent []sentLogout
	more chan struct{}
}

type sentLogout struct {
	token  string
	claims map[string]any
	status int
}

func recordBackchannel(t *testing.T, port int, to *service) *backchannelRecorder {
	t.Helper()
	target, _ := url.Parse(to.url)
	proxy := httputil.NewSingleHostReverseProxy(target)
	r := &backchannelRecorder{more: make(chan struct{}, 16)}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		proxy.ServeHTTP(sw, req)
		if req.URL.Path != "/auth/backchannel-logout" {
			return
		}
		tok := form.Get("logout_token")
		r.mu.Lock()
		r.sent = append(r.sent, sentLogout{token: tok, status: sw.status})
		r.mu.Unlock()
		r.more <- struct{}{}
	})}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("the realm's service port %d is taken: %v", port, err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

// wait returns the first n logout tokens Keycloak sent, waiting up to 30 s
// for them.
func (r *backchannelRecorder) wait(t *testing.T, n int) []sentLogout {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		r.mu.Lock()
		got := slices.Clone(r.sent)
		r.mu.Unlock()
		if len(got) >= n {
			for i := range got {
				got[i].claims = payloadClaims(t, got[i].token)
			}
			return got[:n]
		}
		select {
		case <-r.more:
		case <-deadline:
			t.Fatalf("Keycloak sent %d back-channel logouts within 30 s, want %d", len(got), n)
		}
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}
