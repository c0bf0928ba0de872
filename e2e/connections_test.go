//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/internal/testwait"
)

// The upstream's client at Hydra, through which people connect.
const (
	ghClient       = "gh-upstream"
	ghClientSecret = "gh-upstream-e2e-secret"
	// ghTokenLife is the lifetime of the access tokens Hydra issues to it:
	// short, so that the tests see them refreshed.
	ghTokenLife = 8 * time.Second
	// ghRefreshBefore is gateway.connections.refreshBefore in the tests.
	ghRefreshBefore = 3 * time.Second
)

// personalUpstream is an MCP server (the official Go SDK) that acts on the
// account its Bearer token names: gh.whoami asks Hydra's introspection
// who the token is for, and answers "sub <sub> client <client_id>". It
// records every token it was sent.
type personalUpstream struct {
	url    string
	mu     sync.Mutex
	tokens []string
}

func (u *personalUpstream) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.tokens)
}

func startPersonalUpstream(t *testing.T, op *hydraOP) *personalUpstream {
	t.Helper()
	u := &personalUpstream{}
	server := mcp.NewServer(&mcp.Implementation{Name: "gh-upstream", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "gh.whoami", Description: "who the token is for"},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			ti := introspectAt(t, op, strings.TrimPrefix(req.Extra.Header.Get("Authorization"), "Bearer "))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sub " + ti.Sub + " client " + ti.ClientID}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ok {
			u.mu.Lock()
			u.tokens = append(u.tokens, tok)
			u.mu.Unlock()
		}
		if !ok || !introspectAt(t, op, tok).Active {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	u.url = srv.URL
	return u
}

type introspection struct {
	Active   bool   `json:"active"`
	Sub      string `json:"sub"`
	ClientID string `json:"client_id"`
}

// introspectAt asks Hydra's admin API about a token (RFC 7662).
func introspectAt(t *testing.T, op *hydraOP, token string) introspection {
	resp, err := http.PostForm(op.admin+"/admin/oauth2/introspect", url.Values{"token": {token}})
	if err != nil {
		t.Errorf("introspect at Hydra: %v", err)
		return introspection{}
	}
	defer resp.Body.Close()
	var ti introspection
	_ = json.NewDecoder(resp.Body).Decode(&ti)
	return ti
}

// registerUpstreamClient makes the upstream's client at Hydra: code and
// refresh grants, callbacks on each port given, access tokens of
// ghTokenLife. Its secret goes into a credentials folder, returned.
func registerUpstreamClient(t *testing.T, op *hydraOP, ports ...int) string {
	t.Helper()
	var redirects []string
	for _, p := range ports {
		redirects = append(redirects, fmt.Sprintf("http://127.0.0.1:%d/connect/gh/callback", p))
	}
	client := map[string]any{"client_id": ghClient, "client_secret": ghClientSecret, "token_endpoint_auth_method": "client_secret_basic",
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"scope": "openid offline_access", "redirect_uris": redirects}
	if st, b := op.call(t, http.MethodPost, "/admin/clients", client); st != http.StatusCreated {
		t.Fatalf("create the upstream's client at Hydra: %d %s", st, b)
	}
	life := ghTokenLife.String()
	if st, b := op.call(t, http.MethodPut, "/admin/clients/"+ghClient+"/lifespans", map[string]any{
		"authorization_code_grant_access_token_lifespan": life, "refresh_token_grant_access_token_lifespan": life,
		"authorization_code_grant_id_token_lifespan": life, "authorization_code_grant_refresh_token_lifespan": "1h",
		"refresh_token_grant_id_token_lifespan": life, "refresh_token_grant_refresh_token_lifespan": "1h"}); st != http.StatusOK {
		t.Fatalf("set the upstream client's token lifespans: %d %s", st, b)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gh-client-secret"), []byte(ghClientSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// api calls agentauth's API with a Bearer token and decodes the answer.
func api(t *testing.T, s *service, bearer, method, path, body string, want int) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(method, s.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	st, b := do(t, noRedirects(nil), req)
	out := map[string]any{}
	if st != want || (len(b) > 0 && json.Unmarshal([]byte(b), &out) != nil) {
		t.Fatalf("%s %s = %d %s, want %d", method, path, st, b, want)
	}
	return out
}

// registerGH registers server gh with upstream_auth oauth2 at Hydra, its
// tool and a rule letting everyone call it.
func registerGH(t *testing.T, s *service, admin, issuer, endpoint string) {
	t.Helper()
	api(t, s, admin, "POST", "/api/v2/servers", `{"name":"gh","url":"`+s.url+`/mcp/gh","endpoint":"`+endpoint+`",`+
		`"upstream_auth":{"type":"oauth2","issuer":"`+issuer+`","client_id":"`+ghClient+`","client_secret":"gh-client-secret","scopes":["openid","offline_access"]}}`, 201)
	api(t, s, admin, "POST", "/api/v2/tools", `{"name":"gh.whoami","server":"gh","read_only":true}`, 201)
	for _, role := range []string{"ADMIN", "USER"} {
		api(t, s, admin, "POST", "/api/v2/policies", `{"effect":"allow","tool":"gh.*","scope":"role","value":"`+role+`"}`, 201)
	}
}

// agentToken makes a session with an agent for the bearer's person and
// mints the agent's token for gh.
func agentToken(t *testing.T, s *service, bearer string) string {
	t.Helper()
	session := api(t, s, bearer, "POST", "/api/v2/sessions", `{"title":"connections","mode":"auto"}`, 201)["id"].(string)
	agent := api(t, s, bearer, "POST", "/api/v2/sessions/"+session+"/agents", `{}`, 201)["id"].(string)
	return api(t, s, bearer, "POST", "/api/v2/sessions/"+session+"/agents/"+agent+"/token", `{"audience":"gh"}`, 200)["access_token"].(string)
}

// whoamiThrough calls gh.whoami through s's gateway with an agent token,
// as the Go SDK's client (MCP 2026-07-28), and returns its answer.
func whoamiThrough(ctx context.Context, s *service, token string) (string, error) {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-connections", Version: "1.0.0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: s.url + "/mcp/gh", MaxRetries: -1,
			HTTPClient: &http.Client{Transport: withHeaders{map[string]string{"Authorization": "Bearer " + token}, http.DefaultTransport}}}, nil)
	if err != nil {
		return "", err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "gh.whoami", Arguments: map[string]any{}})
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) != 1 {
		return "", fmt.Errorf("gh.whoami: %+v", res)
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

// notConnected posts a tools/call of gh as a 2026-07-28 client (one
// request, no session) and checks it is refused upstream_not_connected
// with the connect URL.
func notConnected(t *testing.T, s *service, token string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url+"/mcp/gh", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+
		`{"name":"gh.whoami","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	for k, v := range map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "gh.whoami"} {
		req.Header.Set(k, v)
	}
	st, b := do(t, noRedirects(nil), req)
	var m struct {
		Error struct {
			Data struct {
				Reason     string `json:"reason_code"`
				ConnectURL string `json:"connect_url"`
			} `json:"data"`
		} `json:"error"`
	}
	if _ = json.Unmarshal([]byte(b), &m); st != 200 || m.Error.Data.Reason != "upstream_not_connected" || m.Error.Data.ConnectURL != s.url+"/connect/gh" {
		t.Errorf("%d %s; want upstream_not_connected with connect_url %s/connect/gh", st, b, s.url)
	}
}

// runConnect runs connect.mjs for user on s in a real Chromium.
func runConnect(t *testing.T, s *service, user, action string) string {
	t.Helper()
	cmd := exec.Command("node", filepath.Join(repo, "e2e", "js", "providers", "connect.mjs"),
		s.url+"/auth/login?return_to=/console/connections", user, hydraUsers[user].password, action, "gh")
	cmd.Stderr = logFile(t, "browser-"+action+"-"+user)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s in the browser as %s: %v (see the browser log)", action, user, err)
	}
	var res struct{ URL, Body string }
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("connect.mjs output %q: %v", out, err)
	}
	return res.Body
}

// connectHeadless connects user on s without a browser: GET
// /connect/gh with the person's Bearer token, Hydra's login form, the
// consent, and the callback.
func connectHeadless(t *testing.T, op *hydraOP, s *service, bearer, user string) {
	t.Helper()
	c := noRedirects(newJar(t))
	get := func(u string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if strings.HasPrefix(u, s.url) {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	next := s.url + "/connect/gh"
	for range 12 {
		var resp *http.Response
		if strings.HasPrefix(next, op.app.URL+"/login?") {
			u, _ := url.Parse(next)
			r, err := c.PostForm(op.app.URL+"/login", url.Values{"challenge": {u.Query().Get("login_challenge")}, "username": {user},
				"password": {hydraUsers[user].password}})
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			resp = r
		} else {
			resp = get(next)
		}
		if resp.StatusCode == http.StatusSeeOther && strings.Contains(resp.Header.Get("Location"), "connected=gh") {
			return
		}
		loc, err := resp.Location()
		if err != nil {
			t.Fatalf("connecting at %s: %d without a redirect", next, resp.StatusCode)
		}
		next = loc.String()
	}
	t.Fatalf("connecting %s ended at %s", user, next)
}

// waitDue waits until the bearer's person's connection to gh is due for
// its refresh (within refreshBefore of its access token's expiry, as the
// API says it).
func waitDue(t *testing.T, s *service, bearer string) {
	t.Helper()
	conns, _ := api(t, s, bearer, "GET", "/api/v2/connections", "", 200)["connections"].([]any)
	if len(conns) != 1 {
		t.Fatalf("connections: %v; want one", conns)
	}
	exp, err := time.Parse(time.RFC3339Nano, fmt.Sprint(conns[0].(map[string]any)["expires_at"]))
	if err != nil {
		t.Fatalf("expires_at: %v", err)
	}
	testwait.Until(t, ghTokenLife+30*time.Second, "the token is due for its refresh", func() (bool, string) {
		return time.Now().After(exp.Add(-ghRefreshBefore + 500*time.Millisecond)), "it expires at " + exp.String()
	})
}

// noTokens fails when any of the secrets is in a file under dir, in the
// lines, or in the texts (audit records, API answers).
func noTokens(t *testing.T, secrets []string, dir string, texts ...string) {
	t.Helper()
	secrets = append(secrets, "ory_at_", "ory_rt_", "ory_ac_") // Hydra's opaque access and refresh tokens, and its codes
	check := func(where, text string) {
		for _, s := range secrets {
			if s != "" && strings.Contains(text, s) {
				t.Errorf("%s holds a token value (%.12s…)", where, s)
			}
		}
	}
	for i, text := range texts {
		check(fmt.Sprintf("text %d", i), text)
	}
	if dir == "" {
		return
	}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil {
			check(path, string(bytes.ToValidUTF8(b, nil)))
		}
		return nil
	})
}

// auditText is every audit record's reason s answers, newest first.
func auditText(t *testing.T, s *service, bearer string) string {
	t.Helper()
	var all []string
	cursor := ""
	for range 20 {
		out := api(t, s, bearer, "GET", "/api/v2/audit?limit=500&cursor="+url.QueryEscape(cursor), "", 200)
		recs, _ := out["records"].([]any)
		for _, r := range recs {
			b, _ := json.Marshal(r)
			all = append(all, string(b))
		}
		next, _ := out["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	return strings.Join(all, "\n")
}

// TestConnections: each person's own credential upstream, against Ory
// Hydra v2.3.0 as agentauth's identity provider and as the upstream's
// authorization server (one Hydra for the test), with a real Chromium and
// the official MCP Go SDK. One instance: bob, not connected, is refused
// with the connect URL and nothing reaches the server; alice connects on
// the console's Connections page, and her agent's calls reach the server
// with a Hydra access token whose sub is alice (never bob's calls, never
// another token); past the token's lifetime her calls still work with a
// refreshed one; Disconnect in the browser revokes her tokens at Hydra
// (inactive at its introspection) and her next call is refused. No token
// value is in the data folder, the log, the audit or an API answer. Two
// instances on PostgreSQL: a connection made on one serves both, and of
// calls on both at once when the token is due, one refreshes it (Hydra
// rotates refresh tokens and refuses a used one: two refreshes would break
// the connection).
func TestConnections(t *testing.T) {
	port, pa, pb := freePort(t), freePort(t), freePort(t)
	op := startHydra(t, "jwt", port)
	creds := registerUpstreamClient(t, op, port, pa, pb)
	up := startPersonalUpstream(t, op)
	oidc := []string{"SERVICE_OIDC_PROVIDER=generic", "SERVICE_OIDC_CLIENT_ID=" + hydraClient, "SERVICE_OIDC_CLIENT_SECRET=" + hydraSecret,
		"SERVICE_OIDC_ROLES_CLAIM=ext.roles", "SERVICE_OIDC_INTROSPECTION_URL=" + op.admin + "/admin/oauth2/introspect",
		"SERVICE_GATEWAY_CREDENTIALS_DIR=" + creds, "SERVICE_GATEWAY_CONNECTIONS_REFRESH_BEFORE=" + ghRefreshBefore.String()}
	t.Logf("Ory Hydra %s at %s: agentauth's provider and the upstream's authorization server (client %s, access tokens of %s)",
		hydraPeer.version, op.issuer, ghClient, ghTokenLife)

	t.Run("one instance, in the browser", func(t *testing.T) {
		data := t.TempDir()
		s := startService(t, &idp{issuer: op.issuer, servicePort: port}, port, append(oidc, "SERVICE_DATA_DIR="+data)...)
		s.waitReady(t)
		alice, bob := op.codeFlow(t, port, "alice").AccessToken, op.codeFlow(t, port, "bob").AccessToken
		registerGH(t, s, alice, op.issuer, up.url)
		aliceAgent, bobAgent := agentToken(t, s, alice), agentToken(t, s, bob)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()

		notConnected(t, s, bobAgent)
		notConnected(t, s, aliceAgent)
		if got := up.seen(); len(got) != 0 {
			t.Fatalf("the server got %d tokens before anyone connected", len(got))
		}

		if body := runConnect(t, s, "alice", "connect"); !strings.Contains(body, "Connected to gh") || !strings.Contains(body, "alice-id") {
			t.Fatalf("after Connect the page says: %s", body)
		}
		got, err := whoamiThrough(ctx, s, aliceAgent)
		if err != nil || got != "sub alice-id client "+ghClient {
			t.Fatalf("alice's agent: %q, %v; want the server to see a Hydra token of alice for %s", got, err, ghClient)
		}
		notConnected(t, s, bobAgent)
		first := up.seen()[len(up.seen())-1]
		for _, tok := range up.seen() {
			if ti := introspectAt(t, op, tok); ti.Sub != "alice-id" {
				t.Errorf("the server got a token of %q; want alice's only", ti.Sub)
			}
		}

		// Past the access token's lifetime the calls still work, with a
		// refreshed token.
		waitDue(t, s, alice)
		testwait.Until(t, 3*ghTokenLife+30*time.Second, "alice's calls carry a refreshed token", func() (bool, string) {
			got, err := whoamiThrough(ctx, s, aliceAgent)
			if err != nil || got != "sub alice-id client "+ghClient {
				t.Fatalf("alice's agent while the token ages: %q, %v", got, err)
			}
			seen := up.seen()
			return seen[len(seen)-1] != first, fmt.Sprintf("%d tokens seen", len(seen))
		})
		list := api(t, s, alice, "GET", "/api/v2/connections", "", 200)
		b, _ := json.Marshal(list)
		if conns, _ := list["connections"].([]any); len(conns) != 1 || !strings.Contains(string(b), `"status":"active"`) || strings.Contains(string(b), `"refreshed_at":null`) {
			t.Errorf("GET /api/v2/connections: %s; want alice's connection, active, refreshed", b)
		}

		// Disconnect, in the browser: the tokens are revoked at Hydra.
		if body := runConnect(t, s, "alice", "disconnect"); !strings.Contains(body, "revoked at "+op.issuer) {
			t.Errorf("after Disconnect the page says: %s", body)
		}
		for _, tok := range up.seen() {
			if introspectAt(t, op, tok).Active {
				t.Errorf("a token of alice is still active at Hydra after Disconnect")
			}
		}
		notConnected(t, s, aliceAgent)

		audit := auditText(t, s, alice)
		for _, w := range []string{"connected alice-id to server gh", "credential connection of alice-id", "(refreshed)",
			"removed the connection of alice-id to server gh; its tokens revoked at " + op.issuer} {
			if !strings.Contains(audit, w) {
				t.Errorf("no audit record says %q", w)
			}
		}
		s.proc.stop() // the data folder whole, the log to its end
		noTokens(t, up.seen(), data, strings.Join(s.proc.output(), "\n"), audit, string(b))
	})

	t.Run("two instances on PostgreSQL", func(t *testing.T) {
		// One agent-token issuer for both, as behind one load balancer.
		env := append(slices.Clone(oidc), "SERVICE_DATABASE_URL="+pgtest.URL(t), "SERVICE_AUDIT_SIGNING_KEY_FILE="+sharedSigningKey(t),
			fmt.Sprintf("SERVICE_AGENT_TOKENS_ISSUER=http://127.0.0.1:%d", pa),
			"SERVICE_AGENT_TOKENS_SIGNING_KEY_FILE="+sharedSigningKey(t), "SERVICE_GATEWAY_CONNECTIONS_KEY_FILE="+sharedSigningKey(t))
		a := startService(t, &idp{issuer: op.issuer, servicePort: pa}, pa, env...)
		b := startService(t, &idp{issuer: op.issuer, servicePort: pb}, pb, env...)
		a.waitReady(t)
		b.waitReady(t)
		alice := op.codeFlow(t, port, "alice").AccessToken
		registerGH(t, a, alice, op.issuer, up.url)
		agent := agentToken(t, a, alice)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()

		connectHeadless(t, op, a, alice, "alice")
		for _, s := range []*service{a, b} {
			if got, err := whoamiThrough(ctx, s, agent); err != nil || got != "sub alice-id client "+ghClient {
				t.Fatalf("alice's agent on %s: %q, %v; want the connection made on A", s.url, got, err)
			}
		}
		refreshed := func() int { return strings.Count(auditText(t, a, alice), "connection of alice-id (refreshed)") }
		for round := 1; round <= 2; round++ {
			// When the token is due, calls on both instances at once.
			waitDue(t, b, alice)
			var wg sync.WaitGroup
			errs := make([]error, 8)
			for i := range errs {
				s := []*service{a, b}[i%2]
				wg.Go(func() {
					got, err := whoamiThrough(ctx, s, agent)
					if err == nil && got != "sub alice-id client "+ghClient {
						err = fmt.Errorf("answered %q", got)
					}
					errs[i] = err
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("round %d, call %d: %v", round, i, err)
				}
			}
			if n := refreshed(); n != round {
				t.Errorf("round %d: %d refreshes recorded in all, want %d: one per round for 8 calls on two instances", round, n, round)
			}
		}
		conns, _ := api(t, a, alice, "GET", "/api/v2/connections", "", 200)["connections"].([]any)
		if len(conns) != 1 || conns[0].(map[string]any)["status"] != "active" {
			t.Errorf("the connection after the rounds: %v; want active (a second refresh would have broken it at Hydra)", conns)
		}
	})
}
