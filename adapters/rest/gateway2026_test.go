package rest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/adapters/auditjson"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
)

// MCP 2026-07-28 through the gateway, with the official Go SDK v1.8.0: its
// client speaks the revision by default, its server when stateless.

// gw2026Client is a Go SDK client at version ("" its default, 2026-07-28)
// that opens URL elicitations by resolving the approval they name, as a
// person would in the console: by the verdict the call's path asks for
// (/approve, /reject; /late opens it and does nothing; any other path
// declines to open it).
func gw2026Client(t *testing.T, h *axHarness, session, token, version string) *mcp.ClientSession {
	t.Helper()
	verdict := map[string]string{}
	elicit := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		_, call, ok := strings.Cut(req.Params.URL, "/console/approvals#call-")
		if !ok {
			return nil, errors.New("not an approval's URL: " + req.Params.URL)
		}
		c, err := h.store.GetToolCall(context.Background(), call)
		if err != nil {
			return nil, err
		}
		var args struct{ Path string }
		_ = json.Unmarshal(c.Arguments, &args)
		switch v := strings.TrimPrefix(args.Path, "/"); v {
		case "approve", "reject":
			if _, ok := verdict[call]; !ok { // a second round: the verdict stands
				h.must(t, 200, "uma", "POST", "/api/v2/sessions/"+session+"/tool-calls/"+call+"/"+v, "")
				verdict[call] = v
			}
		case "late":
		default:
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return &mcp.ElicitResult{Action: "accept"}, nil
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "gateway-2026-client", Version: "1.0.0"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true},
			Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: elicit})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.url + "/mcp/fs", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect at %q: %v", version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestGateway2026 runs every kind of client against every kind of server:
// the Go SDK client at 2026-07-28 and pinned to 2025-11-25, to a server
// serving 2026-07-28 and to one serving only 2025. For each: the client
// negotiates its newest version with the gateway (no refused
// server/discover), tools/list shows what the agent may call, an allowed
// call runs, a denied one never reaches the server, one that asks runs
// once approved and never once rejected (or, for a 2026 client, declined).
// The gateway speaks each server's own era.
func TestGateway2026(t *testing.T) {
	for _, server := range []struct {
		name      string
		stateless bool
	}{{"2026 server", true}, {"2025 server", false}} {
		for _, client := range []string{"", gwLegacy} {
			name := server.name + ", client at " + map[string]string{"": "2026-07-28", gwLegacy: gwLegacy}[client]
			t.Run(name, func(t *testing.T) {
				u := newGWUpstreamOf(t, server.stateless)
				h := gwNew(t, 10*time.Second)
				session, agent, _ := gwWorld(t, h, u)
				h.must(t, 201, "adm", "POST", "/api/v2/tools", `{"name":"fs.region","server":"fs"}`)
				token := gwToken(t, h, session, agent, "fs")
				cs := gw2026Client(t, h, session, token, client)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				want := mcpwire.Modern
				if client != "" {
					want = client
				}
				if got := cs.InitializeResult().ProtocolVersion; got != want {
					t.Errorf("negotiated %s, want %s", got, want)
				}
				if names, want := gwListed(t, ctx, cs), []string{"fs.read", "fs.region", "fs.write"}; !slices.Equal(names, want) {
					t.Errorf("tools/list = %v, want %v", names, want)
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.read", Arguments: map[string]any{"path": "/a"}})
				if err != nil || toolText(t, res) != "fs.read ran on /a" {
					t.Fatalf("fs.read = %+v, %v", res, err)
				}
				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.region", Arguments: map[string]any{"region": "eu west", "path": "/r"}})
				if err != nil || toolText(t, res) != "fs.region ran in eu west" {
					t.Fatalf("fs.region = %+v, %v", res, err)
				}
				// The token was minted after fs.delete was denied: it does
				// not grant it.
				_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.delete", Arguments: map[string]any{"path": "/d"}})
				if code, reason := gwRPCError(t, err); code != mcpwire.CodeDenied || reason != domain.ReasonTokenToolNotGranted {
					t.Errorf("fs.delete: error %d %s", code, reason)
				}
				if client == "" {
					res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.write", Arguments: map[string]any{"path": "/approve"}})
					if err != nil || toolText(t, res) != "fs.write ran on /approve" {
						t.Errorf("approved fs.write = %+v, %v", res, err)
					}
					_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.write", Arguments: map[string]any{"path": "/reject"}})
					if code, reason := gwRPCError(t, err); code != mcpwire.CodeApprovalRejected || reason != domain.ReasonGatewayRejected {
						t.Errorf("rejected fs.write: error %d %s (%v)", code, reason, err)
					}
					_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.write", Arguments: map[string]any{"path": "/decline"}})
					if code, reason := gwRPCError(t, err); code != mcpwire.CodeApprovalWithdrawn || reason != domain.ReasonGatewayWithdrawn {
						t.Errorf("declined fs.write: error %d %s (%v)", code, reason, err)
					}
				} else {
					held := make(chan error, 1)
					go func() {
						res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.write", Arguments: map[string]any{"path": "/approve"}})
						if err == nil && toolText(t, res) != "fs.write ran on /approve" {
							err = errors.New("result " + toolText(t, res))
						}
						held <- err
					}()
					h.must(t, 200, "uma", "POST", "/api/v2/sessions/"+session+"/tool-calls/"+gwPending(t, h, session, "fs.write")+"/approve", "")
					if err := <-held; err != nil {
						t.Errorf("approved fs.write: %v", err)
					}
				}
				ran := u.ran()
				if want := []string{"fs.read /a", "fs.region eu west /r", "fs.write /approve"}; !slices.Equal(ran, want) {
					t.Errorf("the server ran %v, want %v", ran, want)
				}
				// Each server in its own era: 2026-07-28 with its headers, or
				// 2025 (once asked whether it speaks 2026-07-28).
				for _, p := range u.posts() {
					if p.method == "server/discover" {
						continue
					}
					if server.stateless && p.version != mcpwire.Modern {
						t.Errorf("a 2026 server got %+v", p)
					}
					if !server.stateless && (p.version == mcpwire.Modern || p.method != "") {
						t.Errorf("a 2025 server got %+v", p)
					}
					if strings.Contains(p.caps, "roots") || strings.Contains(p.caps, "sampling") {
						t.Errorf("client capabilities relayed: %+v", p)
					}
				}
				if server.stateless && !slices.ContainsFunc(u.posts(), func(p gwSeen) bool { return p.region == "eu west" }) {
					t.Errorf("no call carried Mcp-Param-Region for region %q: %+v", "eu west", u.posts())
				}
				// No refused server/discover: the gateway answers it.
				var page struct {
					Records []auditjson.Record `json:"records"`
				}
				h.do(t, "adm", "GET", "/api/v2/audit?limit=1000", "").decode(t, &page)
				for _, r := range page.Records {
					if strings.Contains(r.Reason, "mcp server/discover") && r.Decision != string(domain.AuditAllow) {
						t.Errorf("server/discover refused: %+v", r)
					}
				}
			})
		}
	}
}

// gwListed are the names tools/list answers, sorted.
func gwListed(t *testing.T, ctx context.Context, cs *mcp.ClientSession) []string {
	t.Helper()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// gw2026Post posts body as a 2026-07-28 request with headers (each
// "Name: value"; MCP-Protocol-Version and Mcp-Method from the body unless
// given) and returns the status and the JSON-RPC error's code and reason.
func gw2026Post(t *testing.T, h *axHarness, token, body string, hdrs ...string) (int, int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", h.url+"/mcp/fs", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	var m struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal([]byte(body), &m)
	req.Header.Set(mcpwire.HeaderProtocolVersion, mcpwire.Modern)
	req.Header.Set(mcpwire.HeaderMethod, m.Method)
	for _, hd := range hdrs {
		k, v, _ := strings.Cut(hd, ": ")
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	code, reason := rpcErrorOf(b)
	return res.StatusCode, code, reason, b
}

// lastMessage is the last message of an answer, JSON or SSE.
func lastMessage(body []byte) []byte {
	if i := strings.LastIndex(string(body), "data: "); i >= 0 {
		body = body[i+len("data: "):]
		if j := strings.IndexByte(string(body), '\n'); j >= 0 {
			body = body[:j]
		}
	}
	return body
}

// caseRequestID is a request id naming a test case.
func caseRequestID(prefix, name string) string {
	return prefix + strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '-'
	}, name)
}

// meta2026 is the _meta of a 2026-07-28 request.
const meta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// TestGateway2026Rules: raw 2026-07-28 requests. What breaks the
// revision's rules is refused (headers that do not say what the body says:
// -32020; a version the gateway does not speak: -32022; a request without
// its _meta: -32602), audited, and never reaches the server; a stateless
// tools/list and tools/call with only the revision's envelope work.
func TestGateway2026Rules(t *testing.T) {
	u := newGWUpstreamOf(t, true)
	h := gwNew(t, 10*time.Second)
	session, agent, _ := gwWorld(t, h, u)
	h.must(t, 201, "adm", "POST", "/api/v2/tools", `{"name":"fs.region","server":"fs"}`)
	token := gwToken(t, h, session, agent, "fs")
	call := func(name, args string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `,` + meta2026 + `}}`
	}
	tests := []struct {
		name, body string
		headers    []string
		status     int
		code       int
		reason     string
	}{
		{"Mcp-Method of another method", call("fs.read", `{"path":"/x"}`), []string{"Mcp-Method: tools/list", "Mcp-Name: fs.read"}, 400, mcpwire.CodeHeaderMismatch, domain.ReasonGatewayHeaderMismatch},
		{"no Mcp-Method", call("fs.read", `{"path":"/x"}`), []string{"Mcp-Method: ", "Mcp-Name: fs.read"}, 400, mcpwire.CodeHeaderMismatch, domain.ReasonGatewayHeaderMismatch},
		{"Mcp-Name of another tool", call("fs.delete", `{"path":"/x"}`), []string{"Mcp-Name: fs.read"}, 400, mcpwire.CodeHeaderMismatch, domain.ReasonGatewayHeaderMismatch},
		{"no Mcp-Name", call("fs.read", `{"path":"/x"}`), nil, 400, mcpwire.CodeHeaderMismatch, domain.ReasonGatewayHeaderMismatch},
		{"Mcp-Name encoded", call("fs.read", `{"path":"/b64"}`), []string{"Mcp-Name: =?base64?ZnMucmVhZA==?="}, 200, 0, ""},
		{"Mcp-Name that does not decode", call("fs.read", `{"path":"/x"}`), []string{"Mcp-Name: =?base64?!!?="}, 400, mcpwire.CodeHeaderMismatch, domain.ReasonGatewayHeaderMismatch},
		{"Mcp-Param of another region", call("fs.region", `{"region":"eu","path":"/x"}`), []string{"Mcp-Name: fs.region", "Mcp-Param-Region: us"}, 400, mcpwire.CodeHeaderMismatch, domain.ReasonGatewayHeaderMismatch},
		{"no Mcp-Param for a region", call("fs.region", `{"region":"eu","path":"/x"}`), []string{"Mcp-Name: fs.region"}, 400, mcpwire.CodeHeaderMismatch, domain.ReasonGatewayHeaderMismatch},
		{"Mcp-Param for no region", call("fs.region", `{"path":"/x"}`), []string{"Mcp-Name: fs.region", "Mcp-Param-Region: eu"}, 400, mcpwire.CodeHeaderMismatch, domain.ReasonGatewayHeaderMismatch},
		{"Mcp-Param that matches", call("fs.region", `{"region":"eu","path":"/ok"}`), []string{"Mcp-Name: fs.region", "mcp-param-region: eu"}, 200, 0, ""},
		{"a version header of another version than _meta's", call("fs.read", `{"path":"/x"}`), []string{"Mcp-Name: fs.read", "MCP-Protocol-Version: 2025-11-25"}, 400, mcpwire.CodeHeaderMismatch, domain.ReasonGatewayHeaderMismatch},
		{"no version header", call("fs.read", `{"path":"/x"}`), []string{"Mcp-Name: fs.read", "MCP-Protocol-Version: "}, 400, mcpwire.CodeHeaderMismatch, domain.ReasonGatewayHeaderMismatch},
		{"a version not spoken", strings.Replace(call("fs.read", `{"path":"/x"}`), "2026-07-28", "2099-01-01", 1), []string{"Mcp-Name: fs.read", "MCP-Protocol-Version: 2099-01-01"}, 400, mcpwire.CodeUnsupportedVersion, domain.ReasonGatewayProtoVersion},
		{"no _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs.read","arguments":{"path":"/x"}}}`, []string{"Mcp-Name: fs.read"}, 400, mcpwire.CodeInvalidParams, domain.ReasonGatewayMalformed},
		{"subscriptions/listen", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + meta2026 + `}}`, nil, 404, mcpwire.CodeMethodNotFound, domain.ReasonGatewayMethod},
		{"initialize, of the old era", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{` + meta2026 + `}}`, nil, 404, mcpwire.CodeMethodNotFound, domain.ReasonGatewayMethod},
		{"tools/list, stateless", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta2026 + `}}`, nil, 200, 0, ""},
		{"tools/call, stateless", call("fs.read", `{"path":"/stateless"}`), []string{"Mcp-Name: fs.read"}, 200, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(u.ran())
			status, code, reason, body := gw2026Post(t, h, token, tt.body, append(tt.headers, "X-Request-ID: "+caseRequestID("r2026-", tt.name))...)
			if status != tt.status || code != tt.code || reason != tt.reason {
				t.Fatalf("%d %d %s (%s), want %d %d %s", status, code, reason, body, tt.status, tt.code, tt.reason)
			}
			if ran := u.ran()[before:]; tt.code != 0 && len(ran) > 0 {
				t.Errorf("refused, yet the server ran %v", ran)
			}
			if tt.code == 0 {
				var res struct {
					Result struct {
						ResultType string `json:"resultType"`
						CacheScope string `json:"cacheScope"`
						TTL        *int   `json:"ttlMs"`
						Tools      []any  `json:"tools"`
					} `json:"result"`
				}
				if json.Unmarshal(lastMessage(body), &res) != nil || res.Result.ResultType != "complete" {
					t.Errorf("answer %s: want a complete result", body)
				}
				if strings.Contains(tt.body, "tools/list") && (res.Result.CacheScope != "private" || res.Result.TTL == nil || *res.Result.TTL > 30000 || len(res.Result.Tools) != 3) {
					t.Errorf("tools/list %s: want the agent's 3 tools, private, ttlMs at most 30000", body)
				}
			}
		})
	}
	// Each refusal is audited as a denial with its reason.
	var page struct {
		Records []auditjson.Record `json:"records"`
	}
	h.do(t, "adm", "GET", "/api/v2/audit?limit=1000", "").decode(t, &page)
	for _, tt := range tests {
		id := caseRequestID("r2026-", tt.name)
		found := false
		for _, rec := range page.Records {
			if rec.RequestID != id {
				continue
			}
			found = true
			if tt.code != 0 && (rec.Decision != string(domain.AuditDeny) || !strings.Contains(rec.Reason, tt.reason)) {
				t.Errorf("%s: audited %s %q, want a denial with %s", tt.name, rec.Decision, rec.Reason, tt.reason)
			}
		}
		if !found {
			t.Errorf("%s: not audited", tt.name)
		}
	}
}

// TestGateway2026ServerAsksForInput: a server's own input_required passes
// through to the 2026 client, and each retry of it is decided as a new
// call. Where a rule asks, the gateway's approval comes first, then the
// server's question, then (the retry being a call of its own) another
// approval, which keeps the server's state and gives it back: the server
// sees its own round trip whole, and runs the call once.
func TestGateway2026ServerAsksForInput(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "asking-upstream", Version: "1.0.0"}, nil)
	var mu sync.Mutex
	var ran []string
	server.AddTool(&mcp.Tool{Name: "fs.confirm", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.RequestState != "up-1" {
			return &mcp.CallToolResult{RequestState: "up-1", InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{Mode: "form", Message: "sure?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}}}}, nil
		}
		mu.Lock()
		ran = append(ran, "fs.confirm")
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "confirmed"}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer up.Close()
	h := gwNew(t, 10*time.Second)
	session, agent, _ := gwWorld(t, h, &gwUpstream{url: up.URL})
	h.must(t, 201, "adm", "POST", "/api/v2/tools", `{"name":"fs.confirm","server":"fs"}`)
	token := gwToken(t, h, session, agent, "fs")
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`
	confirm := func(state, responses string) (string, string) {
		t.Helper()
		params := `"name":"fs.confirm","arguments":{},` + meta
		if state != "" {
			params += `,"requestState":"` + state + `"`
		}
		if responses != "" {
			params += `,"inputResponses":` + responses
		}
		status, code, _, body := gw2026Post(t, h, token, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+params+`}}`, "Mcp-Name: fs.confirm")
		var res struct {
			Result struct {
				ResultType, RequestState string
				InputRequests            map[string]any
				Content                  []struct{ Text string }
			}
		}
		if status != 200 || code != 0 || json.Unmarshal(lastMessage(body), &res) != nil {
			t.Fatalf("tools/call = %d %d %s", status, code, body)
		}
		if res.Result.ResultType == "input_required" {
			if _, asked := res.Result.InputRequests["confirm"]; asked != (res.Result.RequestState == "up-1") {
				t.Fatalf("input_required %s: the server's question with another state than its own", body)
			}
			return "input_required", res.Result.RequestState
		}
		return res.Result.Content[0].Text, ""
	}
	accept := `{"confirm":{"action":"accept","content":{"ok":true}}}`

	// No rule asks: the server's question passes through, the retry runs.
	if got, state := confirm("", ""); got != "input_required" || state != "up-1" {
		t.Fatalf("first call: %s %s, want the server's input_required", got, state)
	}
	if got, _ := confirm("up-1", accept); got != "confirmed" {
		t.Fatalf("retry: %s", got)
	}

	// A rule asks: approval, the server's question, approval again.
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"ask","tool":"fs.confirm","scope":"role","value":"USER"}`)
	approve := func(skip ...string) string {
		id := gwPending(t, h, session, "fs.confirm", skip...)
		h.must(t, 200, "uma", "POST", "/api/v2/sessions/"+session+"/tool-calls/"+id+"/approve", "")
		return id
	}
	got, ours := confirm("", "")
	if got != "input_required" || ours == "" || ours == "up-1" {
		t.Fatalf("the call that asks: %s %s, want the gateway's input_required", got, ours)
	}
	first := approve()
	if got, state := confirm(ours, ""); got != "input_required" || state != "up-1" {
		t.Fatalf("approved: %s %s, want the server's question", got, state)
	}
	got, ours = confirm("up-1", accept)
	if got != "input_required" || ours == "" || ours == "up-1" {
		t.Fatalf("the answer to the server, which asks again: %s %s, want the gateway's input_required", got, ours)
	}
	approve(first)
	if got, _ := confirm(ours, ""); got != "confirmed" {
		t.Fatalf("approved again: %s, want the server's state given back and the call run", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 2 {
		t.Errorf("the server ran %v, want twice (once per round trip completed)", ran)
	}
}
