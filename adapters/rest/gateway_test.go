package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/adapters/auditjson"
	"github.com/agentauth/agentauth/adapters/mcpproxy"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
	"github.com/agentauth/agentauth/ports"

	"github.com/agentauth/agentauth/internal/testwait"
)

// The MCP gateway tested with real peers: the official MCP Go SDK
// (v1.8.0) as the upstream server and as the client.

// gwUpstreamSecret is the gateway's own credential for the upstream.
const gwUpstreamSecret = "upstream-secret-token-1"

// gwUpstream is an MCP server of the Go SDK offering fs.read, fs.write,
// fs.delete and secret.tool (never registered); it records each call it
// runs and the Authorization of every request it gets, and refuses any
// request without the gateway's credential.
type gwUpstream struct {
	url   string
	mu    sync.Mutex
	calls []string
	auths []string
	// seen are the MCP headers of every POST, and the client
	// capabilities its _meta named (MCP 2026-07-28).
	seen []gwSeen
}

// gwSeen is what the upstream saw of one POST.
type gwSeen struct {
	version, method, name, region, caps string
}

func (u *gwUpstream) posts() []gwSeen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.seen)
}

func (u *gwUpstream) ran() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.calls)
}

func newGWUpstream(t testing.TB) *gwUpstream { return newGWUpstreamOf(t, false) }

// newGWUpstreamOf is the upstream serving MCP 2026-07-28 too when
// stateless (the Go SDK serves that revision statelessly only), with one
// more tool, fs.region, whose region argument goes in Mcp-Param-Region.
func newGWUpstreamOf(t testing.TB, stateless bool) *gwUpstream {
	u := &gwUpstream{}
	server := mcp.NewServer(&mcp.Implementation{Name: "fs-upstream", Version: "1.0.0"}, nil)
	server.AddTool(&mcp.Tool{Name: "fs.region", Description: "a tool with a header", InputSchema: map[string]any{"type": "object",
		"properties": map[string]any{"region": map[string]any{"type": "string", "x-mcp-header": "Region"}, "path": map[string]any{"type": "string"}}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Region, Path string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			u.mu.Lock()
			u.calls = append(u.calls, "fs.region "+in.Region+" "+in.Path)
			u.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fs.region ran in " + in.Region}}}, nil
		})
	type pathArgs struct {
		Path string  `json:"path"`
		Mode float64 `json:"mode,omitempty"`
	}
	for _, name := range []string{"fs.read", "fs.write", "fs.delete", "secret.tool"} {
		mcp.AddTool(server, &mcp.Tool{Name: name, Description: "test tool " + name},
			func(_ context.Context, _ *mcp.CallToolRequest, in pathArgs) (*mcp.CallToolResult, any, error) {
				u.mu.Lock()
				u.calls = append(u.calls, name+" "+in.Path)
				u.mu.Unlock()
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ran on " + in.Path}}}, nil, nil
			})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.auths = append(u.auths, r.Header.Get("Authorization"))
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				Params struct {
					Meta map[string]json.RawMessage `json:"_meta"`
				} `json:"params"`
			}
			_ = json.Unmarshal(body, &m)
			u.seen = append(u.seen, gwSeen{version: r.Header.Get(mcpwire.HeaderProtocolVersion), method: r.Header.Get(mcpwire.HeaderMethod),
				name: r.Header.Get(mcpwire.HeaderName), region: r.Header.Get("Mcp-Param-Region"), caps: string(m.Params.Meta[mcpwire.MetaClientCapabilities])})
		}
		u.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+gwUpstreamSecret {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	u.url = srv.URL
	return u
}

// gwResourceBase names the harness's gateway resources.
const gwResourceBase = "https://agentauth.test"

// gwNew serves the access model with the gateway; the upstream
// credential fs-token is a file in a credentials folder.
func gwNew(t testing.TB, callTimeout time.Duration, opts ...func(*app.MCPSettings)) *axHarness {
	t.Helper()
	return gwStart(t, axOptions{}, callTimeout, opts...)
}

// gwStart is gwNew with the harness's options.
func gwStart(t testing.TB, ax axOptions, callTimeout time.Duration, opts ...func(*app.MCPSettings)) *axHarness {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fs-token"), []byte(gwUpstreamSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ax.gateway = &axGateway{
		mcp: app.MCPSettings{Upstream: mcpproxy.NewUpstream(mcpproxy.Limits{MaxBytes: 1 << 20, MaxMessages: 64}),
			Credentials: mcpproxy.NewCredentials(dir), ResourceBase: gwResourceBase,
			CallTimeout: callTimeout, AskTimeout: time.Minute, StreamTimeout: time.Minute, MaxMessageBytes: 64 << 10,
			Poll: 5 * time.Millisecond, KeepAlive: 20 * time.Millisecond},
		edge: Gateway{MetadataURL: "http://metadata.test", AuthorizationServers: []string{"https://idp.test/realms/agentauth", axIssuer}}}
	for _, o := range opts {
		o(&ax.gateway.mcp)
	}
	return axStart(t, filepath.Join(t.TempDir(), "agentauth.db"), ax)
}

// gwWorld registers server fs (upstream u) and its tools with the
// security gateway on; USER may use every tool, fs.write after approval,
// fs.delete never. It returns uma's session, its agent and the agent's
// token for fs.
func gwWorld(t *testing.T, h *axHarness, u *gwUpstream) (session, agent, token string) {
	t.Helper()
	apollo, _ := axTeam(t, h)
	h.must(t, 200, "adm", "PUT", "/api/v2/admin/settings", `{"security_gateway":true,"default_session_mode":"auto"}`)
	h.must(t, 201, "adm", "POST", "/api/v2/servers", `{"name":"fs","url":"`+gwResourceBase+`/mcp/fs","endpoint":"`+u.url+`","credential":"fs-token"}`)
	h.must(t, 201, "adm", "POST", "/api/v2/servers", `{"name":"other","url":"http://127.0.0.1:9/mcp","endpoint":"`+u.url+`","credential":"fs-token"}`)
	for _, tl := range []string{`{"name":"fs.read","server":"fs","read_only":true}`, `{"name":"fs.write","server":"fs"}`,
		`{"name":"fs.delete","server":"fs"}`, `{"name":"other.tool","server":"other"}`} {
		h.must(t, 201, "adm", "POST", "/api/v2/tools", tl)
	}
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"allow","tool":"*","scope":"role","value":"USER"}`)
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"ask","tool":"fs.write","scope":"role","value":"USER"}`)
	session = h.must(t, 201, "uma", "POST", "/api/v2/sessions", `{"title":"s","project":"`+apollo+`","mode":"auto"}`)["id"].(string)
	agent = h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/agents", "")["id"].(string)
	token = gwToken(t, h, session, agent, "fs")
	// Denied after minting: the token still carries fs.delete, the
	// decision at call time refuses it.
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"deny","tool":"fs.delete","scope":"subject","value":"uma"}`)
	return session, agent, token
}

func gwToken(t *testing.T, h *axHarness, session, agent, audience string) string {
	t.Helper()
	return h.must(t, 200, "uma", "POST", "/api/v2/sessions/"+session+"/agents/"+agent+"/token", `{"audience":"`+audience+`"}`)["access_token"].(string)
}

// bearer adds a token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// gwConnect connects the Go SDK's client to the gateway's fs resource, at
// version ("" the SDK's default: 2026-07-28).
func gwConnect(ctx context.Context, h *axHarness, server, token, version string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "gateway-test-client", Version: "1.0.0"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: h.url + "/mcp/" + server, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}
	return client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
}

// gwLegacy is the version whose held stream a call that asks gets.
const gwLegacy = "2025-11-25"

func toolText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res == nil || len(res.Content) != 1 {
		t.Fatalf("result %+v: want one content", res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// gwRPCError returns the JSON-RPC error of err and its reason code.
func gwRPCError(t *testing.T, err error) (int64, string) {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("error %v (%T): want a JSON-RPC error", err, err)
	}
	var data struct {
		Reason string `json:"reason_code"`
	}
	_ = json.Unmarshal(we.Data, &data)
	return we.Code, data.Reason
}

// gwPending waits until session has a pending call of tool, and returns its id.
func gwPending(t *testing.T, h *axHarness, session, tool string, not ...string) string {
	t.Helper()
	var id string
	// A real server: the held call is stored by another goroutine.
	testwait.Until(t, 30*time.Second, "a pending call of "+tool, func() (bool, string) {
		var list struct {
			ToolCalls []struct {
				ID, Tool, Status string
			} `json:"tool_calls"`
		}
		h.do(t, "uma", "GET", "/api/v2/sessions/"+session+"/tool-calls", "").decode(t, &list)
		for _, c := range list.ToolCalls {
			if c.Tool == tool && c.Status == "pending" && !slices.Contains(not, c.ID) {
				id = c.ID
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", list.ToolCalls)
	})
	return id
}

func TestGatewayWithGoSDK(t *testing.T) {
	u := newGWUpstream(t)
	h := gwNew(t, 10*time.Second)
	session, _, token := gwWorld(t, h, u)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := gwConnect(ctx, h, "fs", token, gwLegacy)
	if err != nil {
		t.Fatalf("connect through the gateway: %v", err)
	}
	defer cs.Close()

	// tools/list: only what the agent may call now. fs.delete is denied,
	// secret.tool was never registered (the security gateway is on).
	if names, want := gwListed(t, ctx, cs), []string{"fs.read", "fs.write"}; !slices.Equal(names, want) {
		t.Errorf("tools/list = %v, want %v", names, want)
	}

	// Allowed: forwarded.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.read", Arguments: map[string]any{"path": "/a"}})
	if err != nil || toolText(t, res) != "fs.read ran on /a" {
		t.Fatalf("fs.read = %+v, %v", res, err)
	}

	// Denied: the reason code, and the server never sees the call.
	tests := []struct {
		tool, reason string
	}{
		{"fs.delete", domain.ReasonPolicyDeny},
		{"secret.tool", domain.ReasonTokenToolNotGranted},
		{"other.tool", domain.ReasonTokenToolNotGranted},
	}
	for _, tt := range tests {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tt.tool, Arguments: map[string]any{"path": "/d"}})
		if code, reason := gwRPCError(t, err); code != mcpwire.CodeDenied || reason != tt.reason {
			t.Errorf("%s: error %d %s, want %d %s", tt.tool, code, reason, mcpwire.CodeDenied, tt.reason)
		}
	}

	// Ask: held until approved, then forwarded once with the arguments approved.
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	call := func(path string) <-chan outcome {
		done := make(chan outcome, 1)
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.write", Arguments: map[string]any{"path": path, "mode": 1.0}})
			done <- outcome{res, err}
		}()
		return done
	}
	first := call("/x")
	id := gwPending(t, h, session, "fs.write")
	if got := u.ran(); slices.Contains(got, "fs.write /x") {
		t.Fatalf("the held call reached the server before approval: %v", got)
	}
	h.must(t, 200, "adm", "POST", "/api/v2/sessions/"+session+"/tool-calls/"+id+"/approve", "")
	if o := <-first; o.err != nil || toolText(t, o.res) != "fs.write ran on /x" {
		t.Fatalf("approved fs.write = %+v, %v", o.res, o.err)
	}
	var listed struct {
		ToolCalls []toolCallJSON `json:"tool_calls"`
	}
	h.do(t, "uma", "GET", "/api/v2/sessions/"+session+"/tool-calls", "").decode(t, &listed)
	for _, c := range listed.ToolCalls {
		if c.ID == id && (c.ArgsHash == "" || c.UsedAt == nil) {
			t.Errorf("the API shows the approved call as %+v: want its args_sha256 and used_at", c)
		}
	}
	stored, err := h.store.GetToolCall(context.Background(), id)
	canonical, _ := jcs.Transform([]byte(`{"path":"/x","mode":1}`))
	if err != nil || stored.UsedAt.IsZero() || stored.ArgsHash != domain.ArgumentsHash(canonical) {
		t.Errorf("approved call %+v, %v: want used, with the hash of %s", stored, err, canonical)
	}

	// The same call with other arguments is a new decision: held again,
	// and rejected here; the server never runs it.
	second := call("/etc/passwd")
	id2 := gwPending(t, h, session, "fs.write", id)
	h.must(t, 200, "adm", "POST", "/api/v2/sessions/"+session+"/tool-calls/"+id2+"/reject", "")
	if o := <-second; o.err == nil {
		t.Errorf("rejected call answered %+v", o.res)
	} else if code, reason := gwRPCError(t, o.err); code != mcpwire.CodeApprovalRejected || reason != domain.ReasonGatewayRejected {
		t.Errorf("rejected call: error %d %s, want %d %s", code, reason, mcpwire.CodeApprovalRejected, domain.ReasonGatewayRejected)
	}
	if err := h.srv.uc.Gateway.UseApproval(auditCtx(), stored, stored.ArgsHash); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("second use of the approval: %v, want ErrConflict", err)
	}

	if got, want := u.ran(), []string{"fs.read /a", "fs.write /x"}; !slices.Equal(got, want) {
		t.Errorf("the server ran %v, want %v", got, want)
	}
	u.mu.Lock()
	for _, a := range u.auths {
		if a != "Bearer "+gwUpstreamSecret {
			t.Errorf("the server got Authorization %q: only the gateway's own credential may reach it", a)
		}
	}
	u.mu.Unlock()

	// A token for another server opens nothing here.
	otherAgent := h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/agents", "")["id"].(string)
	other := gwToken(t, h, session, otherAgent, "other")
	if _, err := gwConnect(ctx, h, "fs", other, ""); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("connect with a token for another server: %v, want 403", err)
	}

	// Every call is audited: chain, server, tool, arguments' hash,
	// decision, reason, upstream status.
	var page struct {
		Records []auditjson.Record `json:"records"`
	}
	h.do(t, "adm", "GET", "/api/v2/audit?limit=500", "").decode(t, &page)
	want := map[string]bool{"tool fs.read;": false, "tool fs.delete;": false, "decision ask": false, "held tool call released": false, domain.ReasonGatewayOtherServer: false}
	for _, rec := range page.Records {
		for k := range want {
			if strings.Contains(rec.Reason, k) && (k == domain.ReasonGatewayOtherServer || strings.Contains(rec.Reason, "args_sha256 ")) {
				want[k] = true
			}
		}
		if strings.Contains(rec.Reason, "tool fs.delete;") && (rec.Decision != string(domain.AuditDeny) || strings.Contains(rec.Reason, "upstream status")) {
			t.Errorf("denied call's record: %s %q", rec.Decision, rec.Reason)
		}
		if strings.Contains(rec.Reason, "tool fs.read;") && !strings.Contains(rec.Reason, "upstream status 200") {
			t.Errorf("allowed call's record without its upstream status: %q", rec.Reason)
		}
	}
	for k, found := range want {
		if !found {
			t.Errorf("no audit record with %q", k)
		}
	}
}

func (h *axHarness) cfgGateway() *Gateway { return h.srv.cfg.Gateway }

// auditCtx carries an audit intent, as a request's context does.
func auditCtx() context.Context {
	return ports.WithAuditIntent(context.Background(), &domain.AuditIntent{RequestID: "test"})
}

// TestGatewayImportTools: an ADMIN sees the diff between a server's own
// tools/list (the Go SDK server) and the registry, then applies it.
func TestGatewayImportTools(t *testing.T) {
	for _, stateless := range []bool{false, true} { // a 2025 server, a 2026-07-28 one
		u := newGWUpstreamOf(t, stateless)
		h := gwNew(t, 10*time.Second)
		gwWorld(t, h, u)
		type diff struct {
			Applied   bool       `json:"applied"`
			Add       []toolJSON `json:"add"`
			Unchanged []string   `json:"unchanged"`
		}
		if r := h.do(t, "uma", "POST", "/api/v2/servers/fs/tools/import", `{"apply":true}`); r.status != 403 {
			t.Errorf("import as USER: %d, want 403", r.status)
		}
		registered := []string{"fs.delete", "fs.read", "fs.write"}
		news := []string{"fs.region", "secret.tool"}
		tests := []struct {
			apply          bool
			add, unchanged []string
		}{
			{false, news, registered},
			{false, news, registered}, // a diff changes nothing
			{true, news, registered},
			{false, nil, []string{"fs.delete", "fs.read", "fs.region", "fs.write", "secret.tool"}},
		}
		for i, tt := range tests {
			var d diff
			var raw struct {
				Add []map[string]any `json:"add"`
			}
			r := h.do(t, "adm", "POST", "/api/v2/servers/fs/tools/import", fmt.Sprintf(`{"apply":%t}`, tt.apply))
			r.decode(t, &d)
			r.decode(t, &raw)
			var add []string
			for j, tl := range d.Add {
				add = append(add, tl.Name)
				// A tool only proposed has no creation time; one just added has its own.
				if _, has := raw.Add[j]["created_at"]; has == !tt.apply || tt.apply && tl.CreatedAt.IsZero() {
					t.Errorf("stateless %t: import %d (apply %t): tool %s answers created_at %v", stateless, i, tt.apply, tl.Name, raw.Add[j]["created_at"])
				}
			}
			slices.Sort(d.Unchanged)
			if d.Applied != tt.apply || !slices.Equal(add, tt.add) || !slices.Equal(d.Unchanged, tt.unchanged) {
				t.Errorf("stateless %t: import %d (apply %t) = %+v, want add %v, unchanged %v", stateless, i, tt.apply, d, tt.add, tt.unchanged)
			}
		}
		if tl, err := h.store.GetTool(context.Background(), "secret.tool"); err != nil || tl.Server != "fs" || tl.Description != "test tool secret.tool" {
			t.Errorf("imported tool = %+v, %v; want secret.tool of fs, described as its server lists it", tl, err)
		}
	}
}

// TestGatewayAuditArguments: arguments reach the audit record only when
// the operator opts in, cut to the bound; else only their hash does.
func TestGatewayAuditArguments(t *testing.T) {
	tests := []struct {
		bytes int
		want  string
	}{
		{0, ""},
		{12, `arguments {"path":"/lo… (cut)`},
	}
	for _, tt := range tests {
		u := newGWUpstream(t)
		h := gwNew(t, 10*time.Second, func(g *app.MCPSettings) { g.AuditArgumentBytes = tt.bytes })
		_, _, token := gwWorld(t, h, u)
		ctx := context.Background()
		cs, err := gwConnect(ctx, h, "fs", token, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.read", Arguments: map[string]any{"path": "/long/secret/path"}}); err != nil {
			t.Fatal(err)
		}
		cs.Close()
		var page struct {
			Records []auditjson.Record `json:"records"`
		}
		h.do(t, "adm", "GET", "/api/v2/audit?limit=500", "").decode(t, &page)
		got := ""
		for _, rec := range page.Records {
			if strings.Contains(rec.Reason, "tool fs.read;") {
				if i := strings.Index(rec.Reason, "arguments "); i >= 0 {
					got = rec.Reason[i:]
				}
				if strings.Contains(rec.Reason, "secret/path") {
					t.Errorf("bound %d: the record holds the arguments past the bound: %q", tt.bytes, rec.Reason)
				}
			}
		}
		if got != tt.want {
			t.Errorf("bound %d: recorded %q, want %q", tt.bytes, got, tt.want)
		}
	}
}
