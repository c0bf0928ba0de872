package rest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// TestLoginsAreAudited: logins are access decisions, so a public login
// endpoint writes its outcome to the audit log like any other request.
func TestLoginsAreAudited(t *testing.T) {
	h := startOIDC(t, "http://127.0.0.1:1/auth/callback", testLoginCfg)
	h.idp.EXPECT().PasswordGrant(gomock.Any(), "alice", "pw").Return(tokensFor(domain.RoleAdmin), nil)
	h.idp.EXPECT().PasswordGrant(gomock.Any(), "alice", "bad").Return(ports.TokenSet{}, fmt.Errorf("no: %w", domain.ErrUnauthenticated))

	type want struct {
		status            int
		decision, subject string
		reasonHas         string
	}
	calls := []struct {
		headers map[string]string
		body    string
		want    want
	}{
		{jsonCT, `{"username":"alice","password":"bad"}`, want{401, "deny", "", `username "alice"`}},
		{jsonCT, `{"username":"alice","password":"pw"}`, want{200, "allow", "sub-ADMIN", "login session started"}},
		{map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}, `{"username":"alice","password":"pw"}`, want{403, "deny", "", ""}},
	}
	byID := map[string]want{}
	for _, c := range calls {
		resp, body := send(t, client(nil), http.MethodPost, h.url+"/auth/login", c.headers, c.body)
		if resp.StatusCode != c.want.status {
			t.Fatalf("POST /auth/login %s = %d %s, want %d", c.body, resp.StatusCode, body, c.want.status)
		}
		byID[resp.Header.Get("X-Request-ID")] = c.want
	}
	resp, body := send(t, client(nil), http.MethodGet, h.url+"/api/v2/audit?limit=20", map[string]string{"Authorization": "Bearer " + keyAuditor}, "")
	if resp.StatusCode != 200 {
		t.Fatalf("audit: %d %s", resp.StatusCode, body)
	}
	var out auditOut
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, r := range out.Records {
		w, ok := byID[r.RequestID]
		if !ok {
			continue
		}
		found++
		if r.Status != w.status || r.Decision != w.decision || r.Subject != w.subject || r.Path != "/auth/login" || !strings.Contains(r.Reason, w.reasonHas) {
			t.Errorf("record %+v, want %+v", r, w)
		}
	}
	if found != len(calls) {
		t.Errorf("found %d of %d login records", found, len(calls))
	}
}
