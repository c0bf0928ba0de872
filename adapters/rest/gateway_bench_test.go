package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
	"github.com/agentauth/agentauth/ports/porttest"
)

// The gateway's cost beside the same calls sent to the upstream directly:
// a trivial upstream (one JSON answer per POST), 64 concurrent callers
// over loopback. cpu-µs/op is the whole process's CPU (client, gateway
// and upstream) per call; the gateway's share is the difference between
// BenchmarkMCPGateway and BenchmarkMCPDirect.

// trivialMCP answers every request with a fixed result for its id; it
// speaks MCP 2026-07-28 too when modern (its server/discover offers it).
func trivialMCP(modern ...bool) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &m) != nil || m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if len(modern) > 0 && modern[0] && m.Method == "server/discover" {
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[{"type":"text","text":"ok"}]}}`))
	}))
}

const benchCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs.read","arguments":{"path":"/a"}}}`

// benchCall2026 is the same call of an MCP 2026-07-28 client: its _meta,
// and headers (bench2026) saying what the body says; no session.
const benchCall2026 = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs.read","arguments":{"path":"/a"},` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},` +
	`"io.modelcontextprotocol/clientCapabilities":{}}}}`

func bench2026(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token, mcpwire.HeaderProtocolVersion: mcpwire.Modern,
		mcpwire.HeaderMethod: "tools/call", mcpwire.HeaderName: "fs.read"}
}

// benchGateway serves the gateway in front of upstream with uma's agent
// allowed fs.read and denied fs.write, with what requests read kept in
// memory as the service keeps it, and tools registered on fs too; it
// returns an open MCP session.
func benchGateway(b *testing.B, upstream string, tools ...string) (h *axHarness, token, session string) {
	h = gwStart(b, axOptions{inMemory: true}, 10*time.Second)
	ctx, now := porttest.Context(b), time.Now().UTC()
	for _, err := range []error{
		h.store.CreateSession(ctx, domain.Session{ID: "ses_b", Owner: "uma", Mode: domain.ModeAuto, State: domain.SessionActive, CreatedAt: now}),
		h.store.CreateAgent(ctx, domain.Agent{ID: "agt_b", Session: "ses_b", CreatedBy: "uma", CreatedAt: now}),
		h.store.CreateServer(ctx, domain.Server{Name: "fs", URL: gwResourceBase + "/mcp/fs", Endpoint: upstream, Credential: "fs-token", CreatedAt: now}),
		h.store.CreateTool(ctx, domain.Tool{Name: "fs.read", Server: "fs", ReadOnly: true, CreatedAt: now}),
		h.store.CreateTool(ctx, domain.Tool{Name: "fs.write", Server: "fs", CreatedAt: now}),
		createTools(ctx, h, now, tools),
		h.store.CreatePolicy(ctx, domain.PolicyRule{ID: "pol_b", Effect: domain.EffectAllow, Tool: "fs.*", Scope: domain.ScopeRole, Value: "USER", CreatedAt: now}),
	} {
		if err != nil {
			b.Fatal(err)
		}
	}
	out := benchPost(b, func() *http.Request {
		r, _ := http.NewRequest("POST", h.url+"/api/v2/sessions/ses_b/agents/agt_b/token", strings.NewReader(`{"audience":"fs"}`))
		r.Header.Set("Authorization", "Bearer "+axKey("uma"))
		r.Header.Set("Content-Type", "application/json")
		return r
	})
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	_ = json.Unmarshal([]byte(out), &tok)
	if err := h.store.CreatePolicy(ctx, domain.PolicyRule{ID: "pol_d", Effect: domain.EffectDeny, Tool: "fs.write", Scope: domain.ScopeSubject, Value: "uma", CreatedAt: now}); err != nil {
		b.Fatal(err)
	}
	req, _ := http.NewRequest("POST", h.url+"/mcp/fs", strings.NewReader(gwInitialize))
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		b.Fatalf("initialize: %v %v", res, err)
	}
	res.Body.Close()
	return h, tok.AccessToken, res.Header.Get(mcpwire.HeaderSessionID)
}

func createTools(ctx context.Context, h *axHarness, now time.Time, names []string) error {
	for _, name := range names {
		if err := h.store.CreateTool(ctx, domain.Tool{Name: name, Server: "fs", CreatedAt: now}); err != nil {
			return err
		}
	}
	return nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sessionOf are the headers of a 2025 client in its MCP session.
func sessionOf(token, session string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token, mcpwire.HeaderSessionID: session}
}

// runMCP posts body with headers to url from 64 callers; want is a
// substring of every answer.
func runMCP(b *testing.B, url string, headers map[string]string, body, want string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	b.SetParallelism(64 / max(1, testingProcs()))
	b.ReportAllocs()
	start := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("POST", url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			res, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			got, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if !bytes.Contains(got, []byte(want)) {
				b.Errorf("answer %s, want %s", got, want)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
}

func BenchmarkMCPDirect(b *testing.B) {
	up := trivialMCP()
	defer up.Close()
	runMCP(b, up.URL, nil, benchCall, `"text":"ok"`)
}

func BenchmarkMCPGateway(b *testing.B) {
	up := trivialMCP()
	defer up.Close()
	h, token, session := benchGateway(b, up.URL)
	runMCP(b, h.url+"/mcp/fs", sessionOf(token, session), benchCall, `"text":"ok"`)
}

// BenchmarkMCPGateway2026 is BenchmarkMCPGateway for an MCP 2026-07-28
// client to a server that speaks it: no session, the revision's headers
// checked against the body, its _meta relayed.
func BenchmarkMCPGateway2026(b *testing.B) {
	up := trivialMCP(true)
	defer up.Close()
	h, token, _ := benchGateway(b, up.URL)
	runMCP(b, h.url+"/mcp/fs", bench2026(token), benchCall2026, `"text":"ok"`)
}

// BenchmarkMCPGatewayDenied: a denied call costs no upstream round trip.
func BenchmarkMCPGatewayDenied(b *testing.B) {
	up := trivialMCP()
	defer up.Close()
	h, token, session := benchGateway(b, up.URL)
	runMCP(b, h.url+"/mcp/fs", sessionOf(token, session), strings.Replace(benchCall, "fs.read", "fs.write", 1), `"reason_code":"policy_deny"`)
}

// listedTools is a tools/list result of n tools fs.t00… as a server
// declares them: a description, an input schema of three properties,
// annotations (about 600 bytes each).
func listedTools(n int) string {
	tools := make([]string, n)
	for i := range tools {
		tools[i] = fmt.Sprintf(`{"name":"fs.t%02d","title":"Tool %d","description":"Writes a note to the notes folder, creating it when it does not exist; the text replaces the note's or is appended (tool %d).",`+
			`"inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"where"},"text":{"type":"string"},"mode":{"type":"string","enum":["append","replace"]}},"required":["path","text"]},`+
			`"annotations":{"readOnlyHint":false,"destructiveHint":true},"_meta":{"example.com/rank":%d}}`, i, i, i, i)
	}
	return `{"tools":[` + strings.Join(tools, ",") + `]}`
}

// BenchmarkMCPGatewayToolsList50 is a tools/list through the gateway of a
// server listing 50 tools, all registered and allowed: each listed tool's
// definition compared with its pin (app.Gateway.CheckDefinitions) on
// every list.
func BenchmarkMCPGatewayToolsList50(b *testing.B) {
	result := listedTools(50)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &m) != nil || m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + `}`))
	}))
	defer up.Close()
	names := make([]string, 50)
	for i := range names {
		names[i] = fmt.Sprintf("fs.t%02d", i)
	}
	h, token, session := benchGateway(b, up.URL, names...)
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	// The first list pins the 50 definitions (trust on first sight).
	if out := benchPost(b, func() *http.Request {
		r, _ := http.NewRequest("POST", h.url+"/mcp/fs", strings.NewReader(list))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range sessionOf(token, session) {
			r.Header.Set(k, v)
		}
		return r
	}); !strings.Contains(out, `"fs.t49"`) {
		b.Fatalf("first tools/list = %s", out)
	}
	runMCP(b, h.url+"/mcp/fs", sessionOf(token, session), list, `"fs.t49"`)
}

func testingProcs() int { return runtime.GOMAXPROCS(0) }
