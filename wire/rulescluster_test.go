package wire_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/config"
)

// umaKey is the auth.keys key of the USER whose credentials the rules
// tests follow.
const umaKey = "uma-role-key-0123456789abcdef"

// TestClusterRoleRulesBindEveryCredential: two instances on one PostgreSQL
// database. A role deny, then a role ask, made on A binds on B the next
// decision of every credential derived from a USER — its agent token (made
// before the rule), a managed key and a login cookie — on POST …/tool-calls
// and through the MCP gateway (tools/list and tools/call), each decision
// naming the rule. An instance started with the USER's key moved to
// AUDITOR narrows the token and the key at once.
func TestClusterRoleRulesBindEveryCredential(t *testing.T) {
	dbURL := pgtest.URL(t)
	checkRoleRules(t, dbURL, func(tune func(*config.Config)) (*instance, *instance) {
		return startInstance(t, dbURL, tune), startInstance(t, dbURL, tune)
	})
}

// TestRoleRulesBindEveryCredentialOnSQLite: the same with one instance on
// SQLite.
func TestRoleRulesBindEveryCredentialOnSQLite(t *testing.T) {
	checkRoleRules(t, "", func(tune func(*config.Config)) (*instance, *instance) {
		in := startInstance(t, "", tune)
		return in, in
	})
}

// credential is one way uma calls: its Authorization or Cookie header,
// and whether it names the agent it acts for (every credential but an
// agent token).
type credential struct {
	name   string
	header string
	value  string
	names  bool
}

func checkRoleRules(t *testing.T, dbURL string, start func(func(*config.Config)) (*instance, *instance)) {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "rules-upstream", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "fs.read"}, func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "read"}}}, nil, nil
	})
	upstream := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer upstream.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fs-token"), []byte("upstream-credential"), 0o600); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "uma.key")
	if err := os.WriteFile(keyFile, []byte(umaKey), 0o600); err != nil {
		t.Fatal(err)
	}
	withRole := func(role string) func(*config.Config) {
		return func(c *config.Config) {
			c.Gateway.CredentialsDir = dir
			c.Auth.Keys = []config.RoleKey{{Subject: "uma", Role: role, KeyFile: keyFile}}
		}
	}
	a, b := start(withRole("USER"))

	mustCall(t, 201, "POST", a.url+"/api/v2/servers", clusterKey, map[string]string{"name": "fs", "url": "https://agentauth.test/mcp/fs", "endpoint": upstream.URL, "credential": "fs-token"})
	mustCall(t, 201, "POST", a.url+"/api/v2/tools", clusterKey, map[string]any{"name": "fs.read", "server": "fs", "read_only": true})
	allow := mustCall(t, 201, "POST", a.url+"/api/v2/policies", clusterKey, map[string]string{"effect": "allow", "tool": "*", "scope": "role", "value": "USER"})["id"].(string)
	session := mustCall(t, 201, "POST", a.url+"/api/v2/sessions", umaKey, map[string]string{"title": "rules", "mode": "auto"})["id"].(string)
	agent := mustCall(t, 201, "POST", a.url+"/api/v2/sessions/"+session+"/agents", umaKey, nil)["id"].(string)
	token := mustCall(t, 200, "POST", a.url+"/api/v2/sessions/"+session+"/agents/"+agent+"/token", umaKey, map[string]string{"audience": "fs"})["access_token"].(string)
	managed := mustCall(t, 201, "POST", a.url+"/api/v2/keys", umaKey, map[string]string{"name": "runner", "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})["key"].(string)
	creds := []credential{
		{"agent token", "Authorization", "Bearer " + token, false},
		{"managed key", "Authorization", "Bearer " + managed, true},
		{"cookie", "Cookie", signIn(t, b, umaKey), true},
	}
	calls := b.url + "/api/v2/sessions/" + session + "/tool-calls"
	// decided is B's decision for each credential, taken twice (the first
	// may read the database, the second reads memory) so that a change is
	// seen after a decision from memory.
	decided := func(step, effect, reason, rule string) {
		t.Helper()
		for _, c := range creds {
			for range 2 {
				body := map[string]string{"tool": "fs.read"}
				if c.names {
					body["agent"] = agent
				}
				status, got := send(t, "POST", calls, c, nil, body)
				var tc struct{ Decision, Reason, Rule, Message string }
				_ = json.Unmarshal(got, &tc)
				want := reason
				if want == "" { // allowed: an agent token's reason says the token grants it too
					want = map[bool]string{true: "policy_allow", false: "token_policy_allow"}[c.names]
				}
				if status != 201 || tc.Decision != effect || tc.Reason != want || tc.Rule != rule || !strings.Contains(tc.Message, rule) {
					t.Fatalf("%s, %s on B: %d %s, want %s %s naming rule %s", step, c.name, status, got, effect, reason, rule)
				}
			}
		}
	}
	gw := map[string]*mcpClient{}
	for _, c := range creds {
		gw[c.name] = openMCP(t, b.url+"/mcp/fs", c, session, agent)
	}
	listed := func(step string, want bool) {
		t.Helper()
		for _, c := range creds {
			_, body := gw[c.name].post(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
			if got := strings.Contains(body, `"fs.read"`); got != want {
				t.Errorf("%s, %s: tools/list through B's gateway lists fs.read: %v, want %v (%s)", step, c.name, got, want, body)
			}
		}
	}

	decided("the rule allows", "allow", "", allow)
	listed("the rule allows", true)
	for _, c := range creds {
		if _, body := gw[c.name].post(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fs.read","arguments":{}}}`); !strings.Contains(body, `"read"`) {
			t.Errorf("%s: tools/call through B's gateway = %s, want the upstream's answer", c.name, body)
		}
	}

	deny := mustCall(t, 201, "POST", a.url+"/api/v2/policies", clusterKey, map[string]string{"effect": "deny", "tool": "fs.read", "scope": "role", "value": "USER"})["id"].(string)
	decided("A made a role deny", "deny", "policy_deny", deny)
	listed("A made a role deny", false)
	for _, c := range creds {
		_, body := gw[c.name].post(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fs.read","arguments":{}}}`)
		if !strings.Contains(body, `"policy_deny"`) || !strings.Contains(body, deny) || strings.Contains(body, `"read"`) {
			t.Errorf("%s: tools/call through B's gateway after the deny = %s, want -32001 policy_deny naming %s", c.name, body, deny)
		}
	}

	mustCall(t, 204, "DELETE", a.url+"/api/v2/policies/"+deny, clusterKey, nil)
	ask := mustCall(t, 201, "POST", a.url+"/api/v2/policies", clusterKey, map[string]string{"effect": "ask", "tool": "fs.read", "scope": "role", "value": "USER"})["id"].(string)
	decided("A replaced it with a role ask", "ask", "policy_ask", ask)
	listed("A replaced it with a role ask", true)
	for _, c := range creds {
		if held := gw[c.name].held(t, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fs.read","arguments":{}}}`); !strings.Contains(held, "waits for approval") {
			t.Errorf("%s: tools/call through B's gateway after the ask = %q, want it held for approval", c.name, held)
		}
	}
	mustCall(t, 204, "DELETE", a.url+"/api/v2/policies/"+ask, clusterKey, nil)

	// The configuration moves uma's key to AUDITOR: an instance started
	// with it decides the token and the key with AUDITOR's permissions.
	a.stop()
	b.stop()
	c, _ := start(func(cfg *config.Config) {
		withRole("AUDITOR")(cfg)
		if dbURL == "" {
			cfg.DataDir = a.dataDir
		}
	})
	demoted := credential{"agent token", "Authorization", "Bearer " + token, false}
	status, got := send(t, "POST", c.url+"/api/v2/sessions/"+session+"/tool-calls", demoted, nil, map[string]string{"tool": "fs.read"})
	if status != 201 || !strings.Contains(string(got), `"reason":"role_lacks_permission"`) {
		t.Errorf("the agent token of an owner demoted by configuration: %d %s, want deny role_lacks_permission", status, got)
	}
	status, got = send(t, "GET", c.url+"/api/v2/me", credential{"managed key", "Authorization", "Bearer " + managed, true}, nil, nil)
	if status != 200 || strings.Contains(string(got), "toolcalls:write") || !strings.Contains(string(got), `"AUDITOR"`) {
		t.Errorf("/api/v2/me of the managed key of an owner demoted by configuration: %d %s, want AUDITOR's permissions", status, got)
	}

	// The configuration drops uma's key altogether: nothing derived from
	// it keeps the roles it last had.
	c.stop()
	d, _ := start(func(cfg *config.Config) {
		withRole("USER")(cfg)
		cfg.Auth.Keys = nil
		if dbURL == "" {
			cfg.DataDir = a.dataDir
		}
	})
	status, got = send(t, "POST", d.url+"/api/v2/sessions/"+session+"/tool-calls", demoted, nil, map[string]string{"tool": "fs.read"})
	if status != 201 || !strings.Contains(string(got), `"decision":"deny"`) {
		t.Errorf("the agent token of an owner removed from auth.keys: %d %s, want it denied", status, got)
	}
	status, got = send(t, "GET", d.url+"/api/v2/me", credential{"managed key", "Authorization", "Bearer " + managed, true}, nil, nil)
	if status != 401 && status != 403 {
		t.Errorf("/api/v2/me of the managed key of an owner removed from auth.keys: %d %s, want it refused", status, got)
	}
}

// signIn exchanges key for a login cookie on in (POST /auth/key) and
// returns the Cookie header that presents it.
func signIn(t *testing.T, in *instance, key string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", in.url+"/auth/key", strings.NewReader(`{"key":"`+key+`"}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	for _, c := range res.Cookies() {
		if c.Name == "user_session" {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("POST /auth/key = %d, no user_session cookie", res.StatusCode)
	return ""
}

// send makes one request with credential c (and extra headers), body as
// JSON.
func send(t *testing.T, method, url string, c credential, extra map[string]string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader = http.NoBody
	if s, ok := body.(string); ok {
		rd = strings.NewReader(s)
	} else if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set(c.header, c.value)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got, _ := io.ReadAll(res.Body)
	return res.StatusCode, got
}

// mcpClient speaks MCP's Streamable HTTP to a gateway endpoint with one
// credential, in one MCP session.
type mcpClient struct {
	url     string
	c       credential
	headers map[string]string
}

// openMCP initializes an MCP session at url with c, naming the agent when
// c does not carry one.
func openMCP(t *testing.T, url string, c credential, session, agent string) *mcpClient {
	t.Helper()
	m := &mcpClient{url: url, c: c, headers: map[string]string{"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}}
	if c.names {
		m.headers["X-Agentauth-Session"], m.headers["X-Agentauth-Agent"] = session, agent
	}
	req := m.request(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	id := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != 200 || id == "" {
		t.Fatalf("%s: initialize = %d %s", c.name, res.StatusCode, body)
	}
	m.headers["Mcp-Session-Id"] = id
	return m
}

func (m *mcpClient) request(body string) *http.Request {
	req, _ := http.NewRequest("POST", m.url, strings.NewReader(body))
	req.Header.Set(m.c.header, m.c.value)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range m.headers {
		req.Header.Set(k, v)
	}
	return req
}

// post sends one message and reads the whole answer.
func (m *mcpClient) post(t *testing.T, body string) (int, string) {
	t.Helper()
	res, err := client.Do(m.request(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(got)
}

// held sends a message the gateway holds for approval and returns the
// first line of the held stream, then goes away.
func (m *mcpClient) held(t *testing.T, body string) string {
	t.Helper()
	res, err := client.Do(m.request(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	line, _ := bufio.NewReader(res.Body).ReadString('\n')
	return line
}
