package rest

import (
	"bytes"
	"context"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/ports"
)

// TestConnectionsAPI: a person connects a server (GET /connect/{server}
// to the authorization server, back through its callback, which only the
// person who began may complete), lists their connections (ADMIN and
// AUDITOR everyone's), and removes them (another person's only with
// connections:manage), each step audited; no token value is ever in an
// answer, an audit record or the data folder.
func TestConnectionsAPI(t *testing.T) {
	h := axNew(t)
	h.must(t, 201, "adm", "POST", "/api/v2/servers", `{"name":"gh","url":"https://gh.example/mcp","endpoint":"https://gh.internal/mcp",`+
		`"upstream_auth":{"type":"oauth2","issuer":"https://as.example/","client_id":"agentauth","scopes":["repo"]}}`)
	h.must(t, 201, "adm", "POST", "/api/v2/servers", `{"name":"plain","url":"https://plain.example/mcp"}`)

	begin := func(subject string) url.Values {
		t.Helper()
		r := h.do(t, subject, "GET", "/connect/gh?return_to=/console/connections", "")
		if r.status != 302 {
			t.Fatalf("GET /connect/gh as %s = %d %s, want 302", subject, r.status, r.body)
		}
		loc, err := url.Parse(r.location)
		if err != nil || loc.Host != "as.example" || loc.Query().Get("redirect_uri") != "http://agentauth.test/connect/gh/callback" {
			t.Fatalf("redirected to %q, want the authorization server with the callback", r.location)
		}
		return loc.Query()
	}
	q := begin("uma")
	other := h.do(t, "lea", "GET", "/connect/gh/callback?state="+url.QueryEscape(q.Get("state"))+"&code=c1", "")
	if other.status != 403 || !strings.Contains(string(other.body), "connect_request_of_another") {
		t.Errorf("another person's callback = %d %s, want 403 connect_request_of_another", other.status, other.body)
	}
	q = begin("uma")
	back := h.do(t, "uma", "GET", "/connect/gh/callback?state="+url.QueryEscape(q.Get("state"))+"&code=c2", "")
	if back.status != 303 || back.location != "/console/connections?connected=gh" {
		t.Fatalf("callback = %d %q %s, want 303 to /console/connections?connected=gh", back.status, back.location, back.body)
	}
	if r := h.do(t, "uma", "GET", "/connect/gh/callback?state="+url.QueryEscape(q.Get("state"))+"&code=c2", ""); r.status != 400 {
		t.Errorf("the callback again = %d %s, want 400", r.status, r.body)
	}
	q = begin("adm")
	h.do(t, "adm", "GET", "/connect/gh/callback?state="+url.QueryEscape(q.Get("state"))+"&code=c3", "")

	steps := []struct {
		name, subject, method, path string
		status                      int
		has, hasNot                 string
	}{
		{"one's own", "uma", "GET", "/api/v2/connections", 200, `"subject":"uma","server":"gh","upstream_subject":"upstream-sub","issuer":"https://as.example/","scopes":["repo"],"status":"active"`, `"adm"`},
		{"none of one's own", "lea", "GET", "/api/v2/connections", 200, `"connections":[]`, ""},
		{"AUDITOR sees everyone's", "aud", "GET", "/api/v2/connections", 200, `"subject":"adm"`, ""},
		{"AUDITOR connects nothing", "aud", "GET", "/connect/gh", 403, "connections:write", ""},
		{"an unknown server", "uma", "GET", "/connect/nope", 404, "", ""},
		{"a server without upstream_auth", "uma", "GET", "/connect/plain", 400, "upstream_auth", ""},
		{"a return_to off the site", "uma", "GET", "/connect/gh?return_to=https://evil.example/", 400, "return_to", ""},
		{"a LEAD removing another's", "lea", "DELETE", "/api/v2/connections/gh?subject=uma", 403, "connections:manage", ""},
		{"removing one's own", "uma", "DELETE", "/api/v2/connections/gh", 204, "", ""},
		{"again", "uma", "DELETE", "/api/v2/connections/gh", 404, "", ""},
		{"ADMIN removing another's", "adm", "DELETE", "/api/v2/connections/gh?subject=adm", 204, "", ""},
		{"gone", "aud", "GET", "/api/v2/connections", 200, `"connections":[]`, ""},
	}
	for _, st := range steps {
		r := h.do(t, st.subject, st.method, st.path, "")
		if r.status != st.status || !strings.Contains(string(r.body), st.has) || st.hasNot != "" && strings.Contains(string(r.body), st.hasNot) {
			t.Errorf("%s: %s %s = %d %s, want %d with %s", st.name, st.method, st.path, r.status, r.body, st.status, st.has)
		}
		if bytes.Contains(r.body, []byte("token-value")) {
			t.Errorf("%s: the answer holds a token: %s", st.name, r.body)
		}
	}

	h.stop()
	recs, closeStore := h.reopenAudit(t)
	defer closeStore()
	all := strings.Join(recs, "\n")
	for _, w := range []string{
		"connected uma to server gh (upstream subject upstream-sub, scopes [repo], issuer https://as.example/)",
		"removed the connection of uma to server gh; its tokens revoked at https://as.example/ (RFC 7009)",
		"removed the connection of adm to server gh; its tokens revoked at https://as.example/ (RFC 7009)",
	} {
		if !strings.Contains(all, w) {
			t.Errorf("no audit record says %q", w)
		}
	}
	if strings.Contains(all, "token-value") {
		t.Error("an audit record holds a token")
	}
	_ = filepath.WalkDir(filepath.Dir(h.path), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && (bytes.Contains(b, []byte("upstream-access-token-value")) || bytes.Contains(b, []byte("upstream-refresh-token-value"))) {
			t.Errorf("%s holds a token value", path)
		}
		return nil
	})
}

// reopenAudit reads every audit record's reason from the stopped
// harness's data folder.
func (h *axHarness) reopenAudit(t *testing.T) ([]string, func()) {
	t.Helper()
	st, closeStore, err := OpenSQLite(h.path, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	recs, err := st.QueryAudit(context.Background(), ports.AuditQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Reason
	}
	return out, closeStore
}
