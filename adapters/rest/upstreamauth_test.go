package rest

import (
	"context"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/ports"
)

// TestServerUpstreamAuth: a registration names how its upstream
// authorizes each person's calls (upstream_auth); the API answers it as
// given (the client secret a file's name), validates it as a whole, and
// PATCH leaves it, changes it or removes it (null); PUT without it
// removes it. Each change is audited with the setting.
func TestServerUpstreamAuth(t *testing.T) {
	h := axNew(t)
	const gh = `{"name":"gh","url":"https://gh.example/mcp","endpoint":"https://gh.internal/mcp",` +
		`"upstream_auth":{"type":"oauth2","issuer":"https://as.example/","client_id":"agentauth","client_secret":"gh-secret","scopes":["repo","read:user"]}}`
	steps := []struct {
		name, method, path, body string
		status                   int
		has                      string // in the answer
	}{
		{"register", "POST", "/api/v2/servers", gh, 201,
			`"upstream_auth":{"type":"oauth2","issuer":"https://as.example/","client_id":"agentauth","client_secret":"gh-secret","scopes":["repo","read:user"]}`},
		{"listed", "GET", "/api/v2/servers", "", 200, `"client_secret":"gh-secret"`},
		{"with a static credential too", "POST", "/api/v2/servers",
			`{"name":"x","url":"https://x.example/mcp","endpoint":"https://x.internal/mcp","credential":"x-token","upstream_auth":{"type":"token_exchange","audience":"x"}}`, 400, "set one"},
		{"without endpoint", "POST", "/api/v2/servers", `{"name":"x","url":"https://x.example/mcp","upstream_auth":{"type":"token_exchange","audience":"x"}}`, 400, "endpoint"},
		{"an unknown member", "POST", "/api/v2/servers",
			`{"name":"x","url":"https://x.example/mcp","endpoint":"https://x.internal/mcp","upstream_auth":{"type":"oauth2","client_id":"c","secret":"s"}}`, 400, "secret"},
		{"not an object", "POST", "/api/v2/servers", `{"name":"x","url":"https://x.example/mcp","endpoint":"https://x.internal/mcp","upstream_auth":"oauth2"}`, 400, "upstream_auth"},
		{"an unknown type", "POST", "/api/v2/servers", `{"name":"x","url":"https://x.example/mcp","endpoint":"https://x.internal/mcp","upstream_auth":{"type":"saml"}}`, 400, "oauth2 or token_exchange"},
		{"PATCH leaves it", "PATCH", "/api/v2/servers/gh", `{"url":"https://gh2.example/mcp"}`, 200, `"type":"oauth2"`},
		{"PATCH changes it", "PATCH", "/api/v2/servers/gh", `{"upstream_auth":{"type":"token_exchange","audience":"gh-api"}}`, 200,
			`"upstream_auth":{"type":"token_exchange","audience":"gh-api"}`},
		{"PATCH to a static credential alone is refused", "PATCH", "/api/v2/servers/gh", `{"credential":"gh-token"}`, 400, "set one"},
		{"PATCH removes it", "PATCH", "/api/v2/servers/gh", `{"upstream_auth":null,"credential":"gh-token"}`, 200, `"credential":"gh-token","created_at"`},
		{"PUT sets it", "PUT", "/api/v2/servers/gh", `{"url":"https://gh.example/mcp","endpoint":"https://gh.internal/mcp","upstream_auth":{"type":"token_exchange","audience":"gh-api"}}`, 200, `"audience":"gh-api"`},
		{"PUT without it removes it", "PUT", "/api/v2/servers/gh", `{"url":"https://gh.example/mcp","endpoint":"https://gh.internal/mcp"}`, 200, `"endpoint":"https://gh.internal/mcp","created_at"`},
	}
	for _, st := range steps {
		r := h.do(t, "adm", st.method, st.path, st.body)
		if r.status != st.status || !strings.Contains(string(r.body), st.has) {
			t.Errorf("%s: %s %s = %d %s, want %d with %s", st.name, st.method, st.path, r.status, r.body, st.status, st.has)
		}
	}
	recs, err := h.store.QueryAudit(context.Background(), ports.AuditQuery{Subject: "adm", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, r := range recs {
		reasons = append(reasons, r.Reason)
	}
	all := strings.Join(reasons, "\n")
	for _, w := range []string{
		"server gh upstream_auth oauth2 issuer https://as.example/ client agentauth scopes repo read:user",
		"upstream_auth oauth2 issuer https://as.example/ client agentauth scopes repo read:user → token_exchange audience gh-api",
		"upstream_auth token_exchange audience gh-api → none",
	} {
		if !strings.Contains(all, w) {
			t.Errorf("no audit record says %q; records:\n%s", w, all)
		}
	}
}
