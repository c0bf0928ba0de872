//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/internal/testwait"
)

// The official MCP SDKs through the built binary's gateway, every client
// against every server: the matrix of issue 30.

// matrixUpstream is a server behind the gateway: its URL, the calls it ran
// ("tool path"), and whether it was spoken to at 2026-07-28 only.
type matrixUpstream struct {
	name   string
	url    string
	ran    func() []string
	modern func() error
}

// startTSUpstream runs e2e/js/mcp/upstream-server.mjs
// (@modelcontextprotocol/server 2.4.0).
func startTSUpstream(t *testing.T) matrixUpstream {
	cmd := exec.Command("node", filepath.Join(repo, "e2e", "js", "mcp", "upstream-server.mjs"))
	cmd.Dir = filepath.Join(repo, "e2e", "js")
	cmd.Env = append(os.Environ(), "CREDENTIAL="+mcpUpstreamSecret)
	p := startProc(t, cmd, "ts-upstream")
	var first struct{ Listening int }
	_ = json.Unmarshal([]byte(p.waitLine(t, time.Minute, `"listening"`)), &first)
	lines := func() []struct{ Ran, Era string } {
		var out []struct{ Ran, Era string }
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, l := range p.lines {
			var r struct{ Ran, Era string }
			if json.Unmarshal([]byte(l), &r) == nil && r.Ran != "" {
				out = append(out, r)
			}
		}
		return out
	}
	return matrixUpstream{name: "@modelcontextprotocol/server 2.4.0", url: fmt.Sprintf("http://127.0.0.1:%d/mcp", first.Listening),
		ran: func() []string {
			var out []string
			for _, r := range lines() {
				out = append(out, r.Ran)
			}
			return out
		},
		modern: func() error {
			for _, r := range lines() {
				if r.Era != "modern" {
					return fmt.Errorf("ran %s in the %s era", r.Ran, r.Era)
				}
			}
			return nil
		}}
}

// startGoUpstream is the Go SDK v1.8.0's stateless server (2026-07-28).
func startGoUpstream(t *testing.T) matrixUpstream {
	u := startMCPUpstreamOf(t, true)
	return matrixUpstream{name: "Go SDK v1.8.0", url: u.url, ran: u.ran, modern: func() error {
		u.mu.Lock()
		defer u.mu.Unlock()
		for v := range u.versions {
			if v != "2026-07-28" {
				return fmt.Errorf("a POST at %q", v)
			}
		}
		return nil
	}}
}

// matrixCell is what one client did.
type matrixCell struct {
	version                      string
	tools                        []string
	allowed, approved            string
	denied, rejected             int
	deniedReason, rejectedReason string
	// gaveUp is the call a client gave up on, once withdrawn.
	gaveUp map[string]any
}

// TestMCPSDKMatrix: through /mcp/fs, to an upstream on
// @modelcontextprotocol/server 2.4.0 and to one on the Go SDK v1.8.0,
// each official client: @modelcontextprotocol/client 2.4.0 in legacy,
// auto and pin 2026-07-28; @modelcontextprotocol/sdk 1.32.2; the Go SDK
// v1.8.0 by default and pinned to 2025-11-25. For each: tools/list
// filtered, an allowed call answered, a denied call never upstream, an ask
// approved and run once, a rejected one never run; 2026-capable clients
// negotiate 2026-07-28 with no refused server/discover in the audit; the
// gateway speaks 2026-07-28 to both servers. The 1.32.2 client, its request
// timeout shortened, gives up on a held call: it is withdrawn, a late
// approval answers 409, and the server never runs it.
func TestMCPSDKMatrix(t *testing.T) {
	needMCPSDK(t)
	for _, pkg := range []string{"client", "server"} {
		if _, err := os.Stat(filepath.Join(repo, "e2e", "js", "node_modules", "@modelcontextprotocol", pkg)); err != nil {
			t.Fatalf("e2e/js/node_modules lacks @modelcontextprotocol/%s (run npm ci in e2e/js): %v", pkg, err)
		}
	}
	clients := []struct {
		name, mode, version string // mode: a matrix-client.mjs MODE, or "go"
		modern              bool
	}{
		{"client 2.4.0 legacy", "legacy", "", false},
		{"client 2.4.0 auto", "auto", "", true},
		{"client 2.4.0 pin 2026-07-28", "pin", "", true},
		{"sdk 1.32.2", "sdk1", "", false},
		{"Go SDK v1.8.0", "go", "", true},
		{"Go SDK v1.8.0 at 2025-11-25", "go", "2025-11-25", false},
	}
	for _, start := range []func(*testing.T) matrixUpstream{startTSUpstream, startGoUpstream} {
		up := start(t)
		s := startGatewayService(t)
		credCall(t, s, "PUT", "/api/v2/admin/settings", `{"security_gateway":true,"default_session_mode":"auto"}`, 200)
		credCall(t, s, "POST", "/api/v2/servers", `{"name":"fs","url":"`+s.url+`/mcp/fs","endpoint":"`+up.url+`","credential":"fs-token"}`, 201)
		for _, tl := range []string{`{"name":"fs.read","server":"fs","read_only":true}`, `{"name":"fs.write","server":"fs"}`, `{"name":"fs.delete","server":"fs"}`} {
			credCall(t, s, "POST", "/api/v2/tools", tl, 201)
		}
		owner := credCall(t, s, "GET", "/api/v2/me", "", 200)["subject"].(string)
		credCall(t, s, "POST", "/api/v2/policies", `{"effect":"allow","tool":"*","scope":"role","value":"ADMIN"}`, 201)
		credCall(t, s, "POST", "/api/v2/policies", `{"effect":"ask","tool":"fs.write","scope":"role","value":"ADMIN"}`, 201)
		credCall(t, s, "POST", "/api/v2/policies", `{"effect":"deny","tool":"fs.delete","scope":"subject","value":"`+owner+`"}`, 201)
		for _, c := range clients {
			t.Run(up.name+", "+c.name, func(t *testing.T) {
				session := credCall(t, s, "POST", "/api/v2/sessions", `{"title":"matrix","mode":"auto"}`, 201)["id"].(string)
				agent := credCall(t, s, "POST", "/api/v2/sessions/"+session+"/agents", `{}`, 201)["id"].(string)
				token := credCall(t, s, "POST", "/api/v2/sessions/"+session+"/agents/"+agent+"/token", `{"audience":"fs"}`, 200)["access_token"].(string)
				prefix := "/" + session
				decide := func(call, verdict string) {
					credCall(t, s, "POST", "/api/v2/sessions/"+session+"/tool-calls/"+call+"/"+verdict, "", 200)
				}
				var got matrixCell
				if c.mode == "go" {
					pending := func(skip string) string { return pendingCall(t, s, credAdminKey, session, "fs.write", skip) }
					got = goMatrixCell(t, s.url+"/mcp/fs", token, c.version, prefix, decide, pending)
				} else {
					got = tsMatrixCell(t, s, session, token, c.mode, prefix, decide)
				}
				if c.modern != (got.version == "2026-07-28") {
					t.Errorf("negotiated %q", got.version)
				}
				if want := []string{"fs.read", "fs.write"}; !slices.Equal(got.tools, want) {
					t.Errorf("tools/list = %v, want %v", got.tools, want)
				}
				if got.allowed != "fs.read ran on "+prefix+"/a" || got.approved != "fs.write ran on "+prefix+"/approve" {
					t.Errorf("allowed %q, approved %q", got.allowed, got.approved)
				}
				if got.denied != -32001 || got.rejected != -31001 || got.rejectedReason != "approval_rejected" {
					t.Errorf("denied %d %s, rejected %d %s", got.denied, got.deniedReason, got.rejected, got.rejectedReason)
				}
				if c.mode == "sdk1" {
					// It gave up (notifications/cancelled): the call is
					// withdrawn, a late approval is 409.
					if got.gaveUp["resolved_by"] != "the client cancelled it" {
						t.Errorf("the call given up: %v", got.gaveUp)
					}
					credCall(t, s, "POST", "/api/v2/sessions/"+session+"/tool-calls/"+got.gaveUp["id"].(string)+"/approve", "", 409)
				}
				var ran []string
				for _, r := range up.ran() {
					if strings.Contains(r, prefix+"/") {
						ran = append(ran, r)
					}
				}
				if want := []string{"fs.read " + prefix + "/a", "fs.write " + prefix + "/approve"}; !slices.Equal(ran, want) {
					t.Errorf("the server ran %v, want %v", ran, want)
				}
			})
		}
		if err := up.modern(); err != nil {
			t.Errorf("%s was not spoken to at 2026-07-28: %v", up.name, err)
		}
		// No refused server/discover: the gateway answers it.
		page := credCall(t, s, "GET", "/api/v2/audit?limit=1000", "", 200)
		for _, r := range page["records"].([]any) {
			rec := r.(map[string]any)
			if reason := fmt.Sprint(rec["reason"]); strings.Contains(reason, "mcp server/discover") && rec["decision"] != "allow" {
				t.Errorf("a refused server/discover: %v", rec)
			}
		}
	}
}

// tsMatrixCell runs e2e/js/mcp/matrix-client.mjs in mode, deciding its
// calls that ask: a 2025 client's held call (found pending), a 2026
// client's once it opens the approval's URL.
func tsMatrixCell(t *testing.T, s *service, session, token, mode, prefix string, decide func(call, verdict string)) matrixCell {
	verdict, decided := "", ""
	var gaveUp map[string]any
	steps := nodeSteps(t, "matrix-client.mjs", []string{"MCP_URL=" + s.url + "/mcp/fs", "TOKEN=" + token, "MODE=" + mode, "PREFIX=" + prefix},
		func(step string, line map[string]any) string {
			switch step {
			case "gave-up":
				testwait.Until(t, 60*time.Second, "the call given up withdrawn", func() (bool, string) {
					list := credCall(t, s, "GET", "/api/v2/sessions/"+session+"/tool-calls", "", 200)["tool_calls"].([]any)
					for _, x := range list {
						if m := x.(map[string]any); m["id"] == decided {
							gaveUp = m
							return m["status"] == "withdrawn", fmt.Sprint(m["status"])
						}
					}
					return false, "no such call"
				})
				return "seen"
			case "held":
				verdict, _ = line["verdict"].(string)
				if mode == "sdk1" || mode == "legacy" {
					id := pendingCall(t, s, credAdminKey, session, "fs.write", decided)
					if verdict != "none" {
						decide(id, verdict)
					}
					decided = id
				}
			case "elicit":
				url, _ := line["url"].(string)
				_, id, ok := strings.Cut(url, "/console/approvals#call-")
				if !ok {
					t.Errorf("elicitation of %q: not an approval's URL", url)
					return "decided"
				}
				decide(id, verdict)
				return "decided"
			}
			return ""
		})
	str := func(step, key string) string { v, _ := steps[step][key].(string); return v }
	errOf := func(step string) (int, string) {
		e, _ := steps[step]["error"].(map[string]any)
		code, _ := e["code"].(float64)
		reason, _ := e["reason"].(string)
		return int(code), reason
	}
	var cell matrixCell
	cell.version = str("connected", "version")
	for _, n := range steps["tools"]["names"].([]any) {
		cell.tools = append(cell.tools, n.(string))
	}
	cell.allowed, cell.approved = str("allowed", "text"), str("approved", "text")
	cell.denied, cell.deniedReason = errOf("denied")
	cell.rejected, cell.rejectedReason = errOf("rejected")
	cell.gaveUp = gaveUp
	return cell
}

// goMatrixCell is the same cell with the Go SDK v1.8.0's client at version
// ("" its default, 2026-07-28), which opens URL elicitations.
func goMatrixCell(t *testing.T, endpoint, token, version, prefix string, decide func(call, verdict string), pending func(skip string) string) matrixCell {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	verdict := ""
	client := mcp.NewClient(&mcp.Implementation{Name: "matrix-go", Version: "1.0.0"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			_, id, ok := strings.Cut(req.Params.URL, "/console/approvals#call-")
			if !ok {
				return nil, errors.New("not an approval's URL: " + req.Params.URL)
			}
			decide(id, verdict)
			return &mcp.ElicitResult{Action: "accept"}, nil
		}})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer(token)}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	var cell matrixCell
	cell.version = cs.InitializeResult().ProtocolVersion
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		cell.tools = append(cell.tools, tl.Name)
	}
	slices.Sort(cell.tools)
	text := func(r *mcp.CallToolResult, err error) string {
		if err != nil || len(r.Content) == 0 {
			return fmt.Sprint(err)
		}
		return r.Content[0].(*mcp.TextContent).Text
	}
	code := func(err error) (int, string) {
		var we *jsonrpc.Error
		if !errors.As(err, &we) {
			return 0, fmt.Sprint(err)
		}
		var d struct {
			Reason string `json:"reason_code"`
		}
		_ = json.Unmarshal(we.Data, &d)
		return int(we.Code), d.Reason
	}
	cell.allowed = text(cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.read", Arguments: map[string]any{"path": prefix + "/a"}}))
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.delete", Arguments: map[string]any{"path": prefix + "/d"}})
	cell.denied, cell.deniedReason = code(err)
	held := ""
	call := func(v string) (*mcp.CallToolResult, error) {
		verdict = v
		if version == "" { // decided when the client opens the approval
			return cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.write", Arguments: map[string]any{"path": prefix + "/" + v}})
		}
		type result struct {
			r   *mcp.CallToolResult
			err error
		}
		done := make(chan result, 1)
		go func() {
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.write", Arguments: map[string]any{"path": prefix + "/" + v}})
			done <- result{r, err}
		}()
		held = pending(held)
		decide(held, v)
		r := <-done
		return r.r, r.err
	}
	cell.approved = text(call("approve"))
	_, err = call("reject")
	cell.rejected, cell.rejectedReason = code(err)
	return cell
}
