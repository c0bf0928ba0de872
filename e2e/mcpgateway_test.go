//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/internal/testwait"
)

const mcpUpstreamSecret = "e2e-upstream-credential-0123"

// mcpUpstream is an MCP server of the official Go SDK (v1.8.0) offering
// fs.read, fs.write and fs.delete; it records what it ran.
type mcpUpstream struct {
	url   string
	mu    sync.Mutex
	calls []string
	auths map[string]bool
	// versions are the MCP-Protocol-Version headers of its POSTs.
	versions map[string]bool
}

func (u *mcpUpstream) ran() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.calls)
}

func startMCPUpstream(t *testing.T) *mcpUpstream { return startMCPUpstreamOf(t, false) }

// startMCPUpstreamOf is the upstream serving MCP 2026-07-28 too when
// stateless (the Go SDK serves that revision statelessly only).
func startMCPUpstreamOf(t *testing.T, stateless bool) *mcpUpstream {
	u := &mcpUpstream{auths: map[string]bool{}, versions: map[string]bool{}}
	server := mcp.NewServer(&mcp.Implementation{Name: "e2e-fs", Version: "1.0.0"}, nil)
	type args struct {
		Path string `json:"path"`
	}
	for _, name := range []string{"fs.read", "fs.write", "fs.delete"} {
		mcp.AddTool(server, &mcp.Tool{Name: name, Description: name}, func(_ context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			u.mu.Lock()
			u.calls = append(u.calls, name+" "+in.Path)
			u.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ran on " + in.Path}}}, nil, nil
		})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.auths[r.Header.Get("Authorization")] = true
		if r.Method == http.MethodPost {
			u.versions[r.Header.Get("Mcp-Protocol-Version")] = true
		}
		u.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	u.url = srv.URL
	return u
}

// startGatewayService runs agentauth in API-key mode with the gateway's
// credentials folder holding the upstream's credential.
func startGatewayService(t *testing.T) *service {
	t.Helper()
	creds := t.TempDir()
	if err := os.WriteFile(filepath.Join(creds, "fs-token"), []byte(mcpUpstreamSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	seed := make([]byte, 32)
	_, _ = rand.Read(seed)
	s := startAgentauth(t, "agentauth-mcp",
		"SERVICE_API_KEY="+credAdminKey,
		"SERVICE_AGENT_TOKENS_SIGNING_KEY="+base64.RawURLEncoding.EncodeToString(seed),
		"SERVICE_GATEWAY_CREDENTIALS_DIR="+creds)
	s.waitReady(t)
	return s
}

// pendingCall waits for a pending call of tool in session, other than
// skip, asking the API of s with key.
func pendingCall(t *testing.T, s *service, key, session, tool, skip string) string {
	t.Helper()
	var id string
	testwait.Until(t, 60*time.Second, "a pending call of "+tool, func() (bool, string) {
		list := keyCall(t, s.url, key, "GET", "/api/v2/sessions/"+session+"/tool-calls", "", 200)
		calls, _ := list["tool_calls"].([]any)
		for _, c := range calls {
			m := c.(map[string]any)
			if m["tool"] == tool && m["status"] == "pending" && m["id"] != skip {
				id = m["id"].(string)
				return true, ""
			}
		}
		return false, fmt.Sprint(calls)
	})
	return id
}

// TestMCPGatewayTypeScriptSDK: the official MCP TypeScript SDK (npm
// @modelcontextprotocol/sdk 1.32.2, e2e/js/mcp/gateway-client.mjs) talks
// to a Go SDK server through agentauth's gateway, on the built binary:
// OAuth discovery finds the protected-resource metadata, tools/list shows
// only the agent's tools, an allowed call runs, a denied one never reaches
// the server, a held one runs once approved, its arguments cannot be
// swapped, and a token for another server is refused.
func TestMCPGatewayTypeScriptSDK(t *testing.T) {
	needMCPSDK(t)
	u := startMCPUpstream(t)
	s := startGatewayService(t)
	credCall(t, s, "PUT", "/api/v2/admin/settings", `{"security_gateway":true,"default_session_mode":"auto"}`, 200)
	credCall(t, s, "POST", "/api/v2/servers", `{"name":"fs","url":"`+s.url+`/mcp/fs","endpoint":"`+u.url+`","credential":"fs-token"}`, 201)
	credCall(t, s, "POST", "/api/v2/servers", `{"name":"other","url":"http://127.0.0.1:9/mcp","endpoint":"`+u.url+`"}`, 201)
	for _, tl := range []string{`{"name":"fs.read","server":"fs","read_only":true}`, `{"name":"fs.write","server":"fs"}`,
		`{"name":"fs.delete","server":"fs"}`, `{"name":"other.run","server":"other"}`} {
		credCall(t, s, "POST", "/api/v2/tools", tl, 201)
	}
	credCall(t, s, "POST", "/api/v2/policies", `{"effect":"allow","tool":"*","scope":"role","value":"ADMIN"}`, 201)
	credCall(t, s, "POST", "/api/v2/policies", `{"effect":"ask","tool":"fs.write","scope":"role","value":"ADMIN"}`, 201)
	session := credCall(t, s, "POST", "/api/v2/sessions", `{"title":"mcp","mode":"auto"}`, 201)["id"].(string)
	agent := credCall(t, s, "POST", "/api/v2/sessions/"+session+"/agents", `{}`, 201)["id"].(string)
	token := credCall(t, s, "POST", "/api/v2/sessions/"+session+"/agents/"+agent+"/token", `{"audience":"fs"}`, 200)["access_token"].(string)
	other := credCall(t, s, "POST", "/api/v2/sessions/"+session+"/agents/"+agent+"/token", `{"audience":"other"}`, 200)["access_token"].(string)
	// Denied after minting, for the session's owner: the decision at call
	// time refuses it (role rules are fixed in the token when it is minted).
	owner := credCall(t, s, "GET", "/api/v2/me", "", 200)["subject"].(string)
	credCall(t, s, "POST", "/api/v2/policies", `{"effect":"deny","tool":"fs.delete","scope":"subject","value":"`+owner+`"}`, 201)

	key := credCall(t, s, "POST", "/api/v2/keys", `{"name":"mcp client","permissions":["sessions:write","toolcalls:write"],"expires_at":"`+
		time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`"}`, 201)["key"].(string)
	approved := ""
	steps := nodeSteps(t, "gateway-client.mjs", []string{"MCP_URL=" + s.url + "/mcp/fs", "TOKEN=" + token, "OTHER_TOKEN=" + other,
		"KEY=" + key, "SESSION=" + session, "AGENT=" + agent}, func(step string, _ map[string]any) string {
		switch step {
		case "held":
			approved = pendingCall(t, s, credAdminKey, session, "fs.write", "")
			credCall(t, s, "POST", "/api/v2/sessions/"+session+"/tool-calls/"+approved+"/approve", "", 200)
		case "held-again":
			id := pendingCall(t, s, credAdminKey, session, "fs.write", approved)
			credCall(t, s, "POST", "/api/v2/sessions/"+session+"/tool-calls/"+id+"/reject", "", 200)
		}
		return ""
	})

	str := func(step, key string) string { v, _ := steps[step][key].(string); return v }
	errOf := func(step string) (float64, string) {
		e, _ := steps[step]["error"].(map[string]any)
		code, _ := e["code"].(float64)
		reason, _ := e["reason"].(string)
		return code, reason
	}
	if str("discovery", "resource") != s.url+"/mcp/fs" || !strings.HasPrefix(str("discovery", "metadataUrl"), s.mgmt+"/.well-known/oauth-protected-resource/mcp/fs") {
		t.Errorf("OAuth discovery: %v", steps["discovery"])
	}
	var names []string
	for _, n := range steps["tools"]["names"].([]any) {
		names = append(names, n.(string))
	}
	if !slices.Equal(names, []string{"fs.read", "fs.write"}) {
		t.Errorf("tools/list = %v, want [fs.read fs.write]", names)
	}
	if got := str("allowed", "text"); got != "fs.read ran on /a" {
		t.Errorf("allowed call: %v", steps["allowed"])
	}
	if code, reason := errOf("denied"); code != -32001 || reason != "policy_deny" {
		t.Errorf("denied call: %v, want -32001 policy_deny", steps["denied"])
	}
	if got := str("approved", "text"); got != "fs.write ran on /x" {
		t.Errorf("approved call: %v", steps["approved"])
	}
	if code, reason := errOf("replayed"); code != -31001 || reason != "approval_rejected" {
		t.Errorf("call with other arguments: %v, want -31001 approval_rejected", steps["replayed"])
	}
	if e, _ := steps["other-server"]["error"].(map[string]any); e == nil || e["code"] != 403.0 || !strings.Contains(fmt.Sprint(e["message"]), "token_audience_other_server") {
		t.Errorf("token for another server: %v, want refused with 403", steps["other-server"])
	}
	var keyNames []string
	for _, n := range steps["managed-key"]["names"].([]any) {
		keyNames = append(keyNames, n.(string))
	}
	if !slices.Equal(keyNames, []string{"fs.read", "fs.write"}) || str("managed-key", "text") != "fs.read ran on /k" {
		t.Errorf("managed key naming the agent: %v", steps["managed-key"])
	}
	if e, _ := steps["managed-key-no-agent"]["error"].(map[string]any); e == nil || e["code"] != 403.0 || !strings.Contains(fmt.Sprint(e["message"]), "gateway_agent_required") {
		t.Errorf("managed key naming no agent: %v, want refused with 403 gateway_agent_required", steps["managed-key-no-agent"])
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if want := []string{"fs.read /a", "fs.write /x", "fs.read /k"}; !slices.Equal(u.calls, want) {
		t.Errorf("the server ran %v, want %v", u.calls, want)
	}
	for a := range u.auths {
		if a != "Bearer "+mcpUpstreamSecret {
			t.Errorf("the server got Authorization %q: only the gateway's credential may reach it", a)
		}
	}
}
