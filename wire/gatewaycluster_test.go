package wire_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/config"
)

// TestClusterGatewaySessions: two instances on one PostgreSQL database; an
// MCP session opened through one instance's gateway goes on through the
// other's (the session id is sealed with a key both derive from the one
// agent-token signing key), and ending it on one ends it on the other.
// The upstream is the official MCP Go SDK's server.
func TestClusterGatewaySessions(t *testing.T) {
	dbURL := pgtest.URL(t)
	server := mcp.NewServer(&mcp.Implementation{Name: "cluster-upstream", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "fs.read"}, func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "read"}}}, nil, nil
	})
	upstream := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer upstream.Close()
	creds := t.TempDir()
	if err := os.WriteFile(filepath.Join(creds, "fs-token"), []byte("upstream-credential"), 0o600); err != nil {
		t.Fatal(err)
	}
	withCreds := func(c *config.Config) { c.Gateway.CredentialsDir = creds }
	a, b := startInstance(t, dbURL, withCreds), startInstance(t, dbURL, withCreds)

	mustCall(t, 201, "POST", a.url+"/api/v2/servers", clusterKey, map[string]string{"name": "fs", "url": "https://agentauth.test/mcp/fs", "endpoint": upstream.URL, "credential": "fs-token"})
	mustCall(t, 201, "POST", a.url+"/api/v2/tools", clusterKey, map[string]any{"name": "fs.read", "server": "fs", "read_only": true})
	mustCall(t, 201, "POST", a.url+"/api/v2/policies", clusterKey, map[string]string{"effect": "allow", "tool": "*", "scope": "role", "value": "ADMIN"})
	session := mustCall(t, 201, "POST", a.url+"/api/v2/sessions", clusterKey, map[string]string{"title": "cluster", "mode": "auto"})["id"].(string)
	agent := mustCall(t, 201, "POST", a.url+"/api/v2/sessions/"+session+"/agents", clusterKey, nil)["id"].(string)
	token := mustCall(t, 200, "POST", a.url+"/api/v2/sessions/"+session+"/agents/"+agent+"/token", clusterKey, map[string]string{"audience": "fs"})["access_token"].(string)

	mcpCall := func(in *instance, method, sessionID, body string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest(method, in.url+"/mcp/fs", bytes.NewReader([]byte(body)))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		if sessionID != "" {
			req.Header.Set("Mcp-Session-Id", sessionID)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		got, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, string(got)
	}
	status, h, body := mcpCall(a, "POST", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	id := h.Get("Mcp-Session-Id")
	if status != 200 || id == "" {
		t.Fatalf("initialize on the first instance = %d %s, session %q", status, body, id)
	}
	steps := []struct {
		name   string
		in     *instance
		method string
		body   string
		status int
		want   string
	}{
		{"initialized, on the second", b, "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 202, ""},
		{"tools/list, on the second", b, "POST", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, 200, `"fs.read"`},
		{"tools/call, on the second", b, "POST", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fs.read","arguments":{}}}`, 200, `"read"`},
		{"ping, on the first", a, "POST", `{"jsonrpc":"2.0","id":4,"method":"ping"}`, 200, `"result"`},
		{"ended on the second", b, "DELETE", "", 204, ""},
		{"then gone on the first", a, "POST", `{"jsonrpc":"2.0","id":5,"method":"ping"}`, 404, ""},
		{"and on the second", b, "POST", `{"jsonrpc":"2.0","id":6,"method":"ping"}`, 404, ""},
	}
	for _, st := range steps {
		status, _, body := mcpCall(st.in, st.method, id, st.body)
		if status != st.status || !strings.Contains(body, st.want) {
			t.Errorf("%s: %d %s, want %d with %s", st.name, status, body, st.status, st.want)
		}
	}
}
