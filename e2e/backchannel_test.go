//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
)

const backchannelKey = "e2e-backchannel-api-key-0123456789abcdef"

// TestBackchannelLogout: two instances on one PostgreSQL database; the
// realm file sends the provider's back-channel logouts to A. When an
// administrator signs a user out at the provider, the stand-in posts a
// logout token per session to A, and at once the user's cookie session is
// refused on A and B and so is a Bearer access token of the ended session,
// while another user's session lives on. A logout token replayed to B, or
// an id token posted as one, is refused 400 and ends nothing; every call is
// audited.
func TestBackchannelLogout(t *testing.T) {
	needStandin(t) // reads what the stand-in sent (/standin/logout-tokens)
	dbURL := pgtest.URL(t)
	p := startIDP(t, 0)
	env := []string{"SERVICE_DATABASE_URL=" + dbURL, "SERVICE_API_KEY=" + backchannelKey,
		"SERVICE_AUDIT_SIGNING_KEY=YmFja2NoYW5uZWwtYXVkaXQtc2lnbmluZy1rZXktMDE",
		"SERVICE_AGENT_TOKENS_SIGNING_KEY=YmFja2NoYW5uZWwtYWdlbnQtdG9rZW4ta2V5LTAxMjM"}
	a := startService(t, p, p.servicePort, env...) // the back-channel logout URL names A's port
	b := startService(t, p, 0, env...)
	a.waitReady(t, 30*time.Second)
	b.waitReady(t, 30*time.Second)

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

	// An administrator signs bob out at the provider.
	admin := grant(t, p, "master", "admin-cli", "", "admin", "admin")
	status, body = get(t, noRedirects(nil), p.base+"/admin/realms/"+realmName+"/users?exact=true&username=bob", admin.AccessToken)
	var users []struct {
		ID string `json:"id"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &users) != nil || len(users) != 1 {
		t.Fatalf("find bob: %d %s", status, body)
	}
	req, _ := http.NewRequest(http.MethodPost, p.base+"/admin/realms/"+realmName+"/users/"+users[0].ID+"/logout", nil)
	req.Header.Set("Authorization", "Bearer "+admin.AccessToken)
	if status, body := do(t, noRedirects(nil), req); status != http.StatusNoContent {
		t.Fatalf("admin logout of bob: %d %s", status, body)
	}

	status, body = get(t, noRedirects(nil), p.base+"/standin/logout-tokens", "")
	var sent struct {
		Sent []struct {
			URL    string `json:"url"`
			SID    string `json:"sid"`
			Status int    `json:"status"`
			Token  string `json:"token"`
		} `json:"sent"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &sent) != nil {
		t.Fatalf("GET /standin/logout-tokens: %d %s", status, body)
	}
	if len(sent.Sent) != 2 {
		t.Fatalf("the provider sent %d back-channel logouts, want 2 (bob's two sessions): %s", len(sent.Sent), body)
	}
	for _, s := range sent.Sent {
		if s.Status != http.StatusOK || !strings.HasPrefix(s.URL, a.url+"/") || s.SID == "" {
			t.Errorf("back-channel logout %+v: want 200 from A with a sid", s)
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
		{"a logout token A accepted, replayed to B", sent.Sent[0].Token, b},
		{"the same token replayed to A", sent.Sent[0].Token, a},
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
