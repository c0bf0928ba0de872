package rest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// TestBackchannelLogoutEndpoint: POST /auth/backchannel-logout needs no
// cookie or other credential, ends the login session of the token's sid,
// is refused 400 for a replayed or invalid token (ending nothing), always
// answers no-store, and every call is audited.
func TestBackchannelLogoutEndpoint(t *testing.T) {
	h := startOIDC(t, "http://127.0.0.1:1/auth/callback", testLoginCfg)
	withSID := func(sid string) ports.TokenSet {
		ts := tokensFor(domain.RoleAdmin)
		ts.SessionID = sid
		return ts
	}
	h.idp.EXPECT().PasswordGrant(gomock.Any(), "alice", "pw").Return(withSID("kc-sid-1"), nil)
	h.idp.EXPECT().PasswordGrant(gomock.Any(), "alice", "pw2").Return(withSID("kc-sid-2"), nil)
	logout := ports.LogoutToken{ID: "jti-1", SessionID: "kc-sid-1", Subject: "sub-ADMIN", AcceptedUntil: time.Now().Add(2 * time.Minute)}
	h.idp.EXPECT().VerifyLogoutToken(gomock.Any(), "good-token").Return(logout, nil).Times(2)
	h.idp.EXPECT().VerifyLogoutToken(gomock.Any(), "an-id-token").Return(ports.LogoutToken{}, fmt.Errorf("logout token: no events claim: %w", domain.ErrInvalidInput))

	login := func(pw string) *http.Client {
		jar, _ := cookiejar.New(nil)
		c := client(jar)
		if resp, body := send(t, c, http.MethodPost, h.url+"/auth/login", jsonCT, `{"username":"alice","password":"`+pw+`"}`); resp.StatusCode != 200 {
			t.Fatalf("login: %d %s", resp.StatusCode, body)
		}
		return c
	}
	me := func(c *http.Client) int {
		resp, _ := send(t, c, http.MethodGet, h.url+"/api/v2/me", nil, "")
		return resp.StatusCode
	}
	one, two := login("pw"), login("pw2")
	if me(one) != 200 || me(two) != 200 {
		t.Fatalf("sessions not working before the logout")
	}

	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	calls := []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		reason  string
	}{
		{"a valid token ends its session", form, "logout_token=good-token", 200, "1 login sessions ended"},
		{"the same token again is a replay", form, "logout_token=good-token", 400, "refused"},
		{"an id token is refused", form, "logout_token=an-id-token", 400, "refused"},
		{"not a form", jsonCT, `{"logout_token":"good-token"}`, 400, "not a form"},
	}
	byID := map[string]int{}
	for i, c := range calls {
		resp, body := send(t, client(nil), http.MethodPost, h.url+"/auth/backchannel-logout", c.headers, c.body)
		if resp.StatusCode != c.status {
			t.Fatalf("%s: %d %s, want %d", c.name, resp.StatusCode, body, c.status)
		}
		if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
			t.Errorf("%s: Cache-Control %q, want no-store", c.name, cc)
		}
		if i == 0 && !strings.Contains(body, `"sessions_ended":1`) {
			t.Errorf("%s: body %s, want sessions_ended 1", c.name, body)
		}
		byID[resp.Header.Get("X-Request-ID")] = i
	}
	if got := me(one); got != 401 {
		t.Errorf("session of the logged-out sid: %d, want 401", got)
	}
	if got := me(two); got != 200 {
		t.Errorf("session of another sid: %d, want 200 (refused tokens end nothing)", got)
	}

	resp, body := send(t, client(nil), http.MethodGet, h.url+"/api/v2/audit?limit=50&path="+url.QueryEscape("/auth/backchannel-logout"),
		map[string]string{"Authorization": "Bearer " + keyAuditor}, "")
	if resp.StatusCode != 200 {
		t.Fatalf("audit: %d %s", resp.StatusCode, body)
	}
	var out auditOut
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, r := range out.Records {
		i, ok := byID[r.RequestID]
		if !ok {
			continue
		}
		found++
		if c := calls[i]; r.Status != c.status || r.Path != "/auth/backchannel-logout" || !strings.Contains(r.Reason, c.reason) {
			t.Errorf("%s: record %+v, want status %d and reason containing %q", c.name, r, c.status, c.reason)
		}
	}
	if found != len(calls) {
		t.Errorf("found %d of %d back-channel logout records", found, len(calls))
	}
}
