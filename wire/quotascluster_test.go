package wire_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/config"
)

// TestClusterQuotas: two instances on one PostgreSQL database. A rule
// allowing fs.read under /srv/ (a condition on the call's arguments) at
// most 3 times per hour per agent admits 3 calls of an agent, whichever
// instance and way (POST …/tool-calls, the MCP gateway) they take; the
// 4th is refused quota_exceeded with its retry time on either instance.
// Of 12 concurrent calls of another agent over both instances, exactly 3
// are allowed. A call the condition refuses counts nothing.
func TestClusterQuotas(t *testing.T) {
	dbURL := pgtest.URL(t)
	checkQuotas(t, func(tune func(*config.Config)) (*instance, *instance) {
		return startInstance(t, dbURL, tune), startInstance(t, dbURL, tune)
	})
}

// TestQuotasOnSQLite: the same on one instance on SQLite.
func TestQuotasOnSQLite(t *testing.T) {
	checkQuotas(t, func(tune func(*config.Config)) (*instance, *instance) {
		in := startInstance(t, "", tune)
		return in, in
	})
}

func checkQuotas(t *testing.T, start func(func(*config.Config)) (*instance, *instance)) {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "quota-upstream", Version: "1.0.0"}, nil)
	type readArgs struct {
		Path string `json:"path"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "fs.read"}, func(_ context.Context, _ *mcp.CallToolRequest, in readArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "read " + in.Path}}}, nil, nil
	})
	upstream := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer upstream.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fs-token"), []byte("upstream-credential"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, b := start(func(c *config.Config) { c.Gateway.CredentialsDir = dir })

	mustCall(t, 201, "POST", a.url+"/api/v2/servers", clusterKey, map[string]string{"name": "fs", "url": "https://agentauth.test/mcp/fs", "endpoint": upstream.URL, "credential": "fs-token"})
	mustCall(t, 201, "POST", a.url+"/api/v2/tools", clusterKey, map[string]any{"name": "fs.read", "server": "fs", "read_only": true})
	rule := mustCall(t, 201, "POST", a.url+"/api/v2/policies", clusterKey, map[string]any{"effect": "allow", "tool": "fs.*", "scope": "role", "value": "ADMIN",
		"when": `args.path.startsWith("/srv/")`, "limit": map[string]any{"calls": 3, "per": "1h", "by": "agent"}})
	if l, _ := rule["limit"].(map[string]any); l["calls"] != 3.0 || l["per"] != "1h" || l["by"] != "agent" {
		t.Fatalf("the rule's limit = %v", rule["limit"])
	}
	id := rule["id"].(string)
	session := mustCall(t, 201, "POST", a.url+"/api/v2/sessions", clusterKey, map[string]string{"title": "quotas", "mode": "auto"})["id"].(string)
	newAgent := func() string {
		return mustCall(t, 201, "POST", a.url+"/api/v2/sessions/"+session+"/agents", clusterKey, nil)["id"].(string)
	}
	agent := newAgent()
	rest := func(in *instance, ag, path string) map[string]any {
		t.Helper()
		return mustCall(t, 201, "POST", in.url+"/api/v2/sessions/"+session+"/tool-calls", clusterKey,
			map[string]any{"agent": ag, "tool": "fs.read", "arguments": map[string]string{"path": path}})
	}
	admin := credential{"admin key", "Authorization", "Bearer " + clusterKey, true}
	gw := openMCP(t, b.url+"/mcp/fs", admin, session, agent)

	if out := rest(a, agent, "/etc/passwd"); out["decision"] != "deny" || out["reason"] != "no_policy_rule" {
		t.Errorf("a call the condition refuses: %v, want deny no_policy_rule", out)
	}
	if out := rest(a, agent, "/srv/1"); out["decision"] != "allow" || out["rule"] != id {
		t.Errorf("call 1 on A: %v, want allow by %s", out, id)
	}
	if _, body := gw.post(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fs.read","arguments":{"path":"/srv/2"}}}`); !strings.Contains(body, "read /srv/2") {
		t.Errorf("call 2 through B's gateway: %s, want the upstream's answer", body)
	}
	if _, body := gw.post(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fs.read","arguments":{"path":"/tmp/x"}}}`); !strings.Contains(body, "no_policy_rule") {
		t.Errorf("a call the condition refuses through B's gateway: %s, want no_policy_rule", body)
	}
	if out := rest(b, agent, "/srv/3"); out["decision"] != "allow" {
		t.Errorf("call 3 on B: %v, want allow", out)
	}
	for _, in := range []*instance{a, b} {
		out := rest(in, agent, "/srv/4")
		retry, _ := time.Parse(time.RFC3339, asString(out["retry_at"]))
		if out["decision"] != "deny" || out["reason"] != "quota_exceeded" || out["rule"] != id || retry.Before(time.Now()) ||
			!strings.Contains(asString(out["message"]), "3 calls per 1h by agent") {
			t.Errorf("call 4 on %s: %v, want deny quota_exceeded by %s with a retry time", in.url, out, id)
		}
	}
	if _, body := gw.post(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fs.read","arguments":{"path":"/srv/5"}}}`); !strings.Contains(body, "quota_exceeded") || strings.Contains(body, "read /srv/5") {
		t.Errorf("call 5 through B's gateway: %s, want quota_exceeded", body)
	}

	// Another agent's own count: 12 calls at once over both instances.
	other := newAgent()
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := []*instance{a, b}[i%2]
			out := mustCall(t, 201, "POST", in.url+"/api/v2/sessions/"+session+"/tool-calls", clusterKey,
				map[string]any{"agent": other, "tool": "fs.read", "arguments": map[string]string{"path": "/srv/c"}})
			mu.Lock()
			got[asString(out["decision"])+" "+asString(out["reason"])]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if got["allow policy_allow"] != 3 || got["deny quota_exceeded"] != 9 {
		t.Errorf("12 concurrent calls over both instances: %v, want 3 allowed and 9 quota_exceeded", got)
	}

	// Each instance reports what it counted and refused.
	_, _, metrics := call(t, "GET", a.url+"/metrics", clusterKey, nil)
	if !strings.Contains(string(metrics), `agentauth_quota_calls_total{limit="policy rule `+id+`",outcome="exceeded"}`) {
		t.Errorf("A's /metrics lacks the quota counter of %s", id)
	}
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}
