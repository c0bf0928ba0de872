package wire_test

import (
	"context"
	"encoding/base64"
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
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/agentauth/agentauth/config"
)

// hookNotice is what the approvals webhook receives, as a receiver reads it.
type hookNotice struct {
	Type string `json:"type"`
	Text string `json:"text"`
	Data struct {
		Call        string          `json:"call"`
		Status      string          `json:"status"`
		Tool        string          `json:"tool"`
		Arguments   json.RawMessage `json:"arguments"`
		ArgsSHA256  string          `json:"args_sha256"`
		AgentChain  []string        `json:"agent_chain"`
		RequestedBy string          `json:"requested_by"`
		Rule        string          `json:"rule"`
		ResolvedBy  string          `json:"resolved_by"`
		ConsoleURL  string          `json:"console_url"`
		Session     struct{ ID, Title string }
	} `json:"data"`
}

// TestApprovalsWebhook: with approvals.webhookURL and its secret set, each
// call that starts to wait — through POST …/tool-calls or held at the
// gateway — and each outcome reaches the webhook, signed: the receiver
// verifies every POST with the Standard Webhooks library.
func TestApprovalsWebhook(t *testing.T) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("approvals-webhook-test-secret-32"))
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	notices := make(chan hookNotice, 10)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil {
			t.Errorf("a notice that does not verify: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var n hookNotice
		if err := json.Unmarshal(body, &n); err != nil {
			t.Errorf("notice %s: %v", body, err)
		}
		notices <- n
	}))
	defer receiver.Close()
	next := func() hookNotice {
		t.Helper()
		select {
		case n := <-notices:
			return n
		case <-time.After(30 * time.Second): // a bound: notices leave at once
			t.Fatal("no notice reached the webhook")
			return hookNotice{}
		}
	}

	server := mcp.NewServer(&mcp.Implementation{Name: "hook-upstream", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "fs.write"}, func(_ context.Context, _ *mcp.CallToolRequest, _ struct {
		Path string `json:"path"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "written"}}}, nil, nil
	})
	upstream := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer upstream.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fs-token"), []byte("upstream-credential"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := startInstance(t, "", func(c *config.Config) {
		c.Gateway.CredentialsDir = dir
		c.Approvals.WebhookURL, c.Approvals.WebhookSecret = receiver.URL, secret // as SERVICE_APPROVALS_WEBHOOK_SECRET sets it
		c.Gateway.ResourceURL = "https://agentauth.example/base"
	})

	mustCall(t, 201, "POST", in.url+"/api/v2/servers", clusterKey, map[string]string{"name": "fs", "url": "https://agentauth.test/mcp/fs", "endpoint": upstream.URL, "credential": "fs-token"})
	mustCall(t, 201, "POST", in.url+"/api/v2/tools", clusterKey, map[string]any{"name": "fs.write", "server": "fs", "description": "Writes a file."})
	mustCall(t, 201, "POST", in.url+"/api/v2/policies", clusterKey, map[string]string{"effect": "allow", "tool": "*", "scope": "role", "value": "ADMIN"})
	rule := mustCall(t, 201, "POST", in.url+"/api/v2/policies", clusterKey, map[string]string{"effect": "ask", "tool": "fs.write", "scope": "role", "value": "ADMIN"})["id"].(string)
	session := mustCall(t, 201, "POST", in.url+"/api/v2/sessions", clusterKey, map[string]string{"title": "hooked", "mode": "auto"})["id"].(string)
	agent := mustCall(t, 201, "POST", in.url+"/api/v2/sessions/"+session+"/agents", clusterKey, nil)["id"].(string)
	calls := in.url + "/api/v2/sessions/" + session + "/tool-calls"

	// Through POST …/tool-calls: asked, then approved.
	asked := mustCall(t, 201, "POST", calls, clusterKey, map[string]any{"agent": agent, "tool": "fs.write", "arguments": map[string]string{"path": "/etc/<app>.conf"}})
	n := next()
	if n.Type != "approval.requested" || n.Data.Call != asked["id"] || n.Data.Status != "pending" || n.Data.Tool != "fs.write" || n.Data.Rule != rule ||
		string(n.Data.Arguments) != `{"path":"/etc/<app>.conf"}` || n.Data.ArgsSHA256 != asked["args_sha256"] || n.Data.Session.ID != session ||
		strings.Join(n.Data.AgentChain, ",") != agent || n.Data.ConsoleURL != "https://agentauth.example/base/console/approvals#call-"+asked["id"].(string) ||
		!strings.Contains(n.Text, n.Data.ConsoleURL) {
		t.Errorf("the notice of a call that waits = %+v", n)
	}
	mustCall(t, 200, "POST", calls+"/"+asked["id"].(string)+"/approve", clusterKey, nil)
	if n := next(); n.Type != "approval.approved" || n.Data.Call != asked["id"] || n.Data.ResolvedBy == "" {
		t.Errorf("the notice of its approval = %+v", n)
	}

	// Held at the gateway: asked, then rejected.
	gw := openMCP(t, in.url+"/mcp/fs", credential{"API key", "Authorization", "Bearer " + clusterKey, true}, session, agent)
	held := make(chan string, 1)
	go func() {
		_, body := gw.post(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fs.write","arguments":{"path":"/srv/x"}}}`)
		held <- body
	}()
	n = next()
	if n.Type != "approval.requested" || string(n.Data.Arguments) != `{"path":"/srv/x"}` || n.Data.Rule != rule {
		t.Errorf("the notice of a call held at the gateway = %+v", n)
	}
	mustCall(t, 200, "POST", calls+"/"+n.Data.Call+"/reject", clusterKey, nil)
	if n := next(); n.Type != "approval.rejected" {
		t.Errorf("the notice of its rejection = %+v", n)
	}
	if body := <-held; !strings.Contains(body, "approval_rejected") {
		t.Errorf("the held call answered %s, want approval_rejected", body)
	}
}
