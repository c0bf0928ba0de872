package wire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/config"
)

// alternating sends each request to the next of the instances in turn,
// as a load balancer without affinity would, and notes which instance got
// each tools/call and whether it was a retry bringing a requestState.
type alternating struct {
	mu    sync.Mutex
	to    []*url.URL
	next  int
	token string
	calls []callSeen
}

type callSeen struct {
	instance int
	retry    bool
}

func (a *alternating) RoundTrip(r *http.Request) (*http.Response, error) {
	a.mu.Lock()
	i := a.next % len(a.to)
	a.next++
	a.mu.Unlock()
	if r.Body != nil {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			Method string `json:"method"`
			Params struct {
				RequestState string `json:"requestState"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
			a.mu.Lock()
			a.calls = append(a.calls, callSeen{i, m.Params.RequestState != ""})
			a.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = a.to[i].Scheme, a.to[i].Host, a.to[i].Host
	r.Header.Set("Authorization", "Bearer "+a.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestClusterGateway2026: two instances on one PostgreSQL database and an
// MCP 2026-07-28 client (the Go SDK v1.8.0's) whose every request goes to
// the other instance than its last, no affinity: server/discover, a
// filtered tools/list, an allowed call, a denied one, and calls that ask,
// answered input_required on one instance, approved, and retried on the
// other (the requestState opens there) to run once, or be refused once
// rejected. The upstream is the Go SDK's stateless server.
func TestClusterGateway2026(t *testing.T) {
	dbURL := pgtest.URL(t)
	server := mcp.NewServer(&mcp.Implementation{Name: "cluster-upstream", Version: "1.0.0"}, nil)
	var mu sync.Mutex
	var ran []string
	for _, name := range []string{"fs.read", "fs.write", "fs.delete"} {
		mcp.AddTool(server, &mcp.Tool{Name: name}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Path string `json:"path"`
		}) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			ran = append(ran, name+" "+in.Path)
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ran on " + in.Path}}}, nil, nil
		})
	}
	upstream := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer upstream.Close()
	creds := t.TempDir()
	if err := os.WriteFile(filepath.Join(creds, "fs-token"), []byte("upstream-credential"), 0o600); err != nil {
		t.Fatal(err)
	}
	withCreds := func(c *config.Config) { c.Gateway.CredentialsDir = creds }
	a, b := startInstance(t, dbURL, withCreds), startInstance(t, dbURL, withCreds)

	mustCall(t, 201, "POST", a.url+"/api/v2/servers", clusterKey, map[string]string{"name": "fs", "url": "https://agentauth.test/mcp/fs", "endpoint": upstream.URL, "credential": "fs-token"})
	for _, tl := range []map[string]any{{"name": "fs.read", "server": "fs", "read_only": true}, {"name": "fs.write", "server": "fs"}, {"name": "fs.delete", "server": "fs"}} {
		mustCall(t, 201, "POST", b.url+"/api/v2/tools", clusterKey, tl)
	}
	mustCall(t, 201, "POST", a.url+"/api/v2/policies", clusterKey, map[string]string{"effect": "allow", "tool": "*", "scope": "role", "value": "ADMIN"})
	mustCall(t, 201, "POST", b.url+"/api/v2/policies", clusterKey, map[string]string{"effect": "ask", "tool": "fs.write", "scope": "role", "value": "ADMIN"})
	mustCall(t, 201, "POST", a.url+"/api/v2/policies", clusterKey, map[string]string{"effect": "deny", "tool": "fs.delete", "scope": "role", "value": "ADMIN"})
	session := mustCall(t, 201, "POST", a.url+"/api/v2/sessions", clusterKey, map[string]string{"title": "cluster", "mode": "auto"})["id"].(string)
	agent := mustCall(t, 201, "POST", a.url+"/api/v2/sessions/"+session+"/agents", clusterKey, nil)["id"].(string)
	token := mustCall(t, 200, "POST", b.url+"/api/v2/sessions/"+session+"/agents/"+agent+"/token", clusterKey, map[string]string{"audience": "fs"})["access_token"].(string)

	ua, _ := url.Parse(a.url)
	ub, _ := url.Parse(b.url)
	lb := &alternating{to: []*url.URL{ua, ub}, token: token}
	verdict := ""
	client := mcp.NewClient(&mcp.Implementation{Name: "cluster-client", Version: "1.0.0"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			_, call, ok := strings.Cut(req.Params.URL, "/console/approvals#call-")
			if !ok {
				return nil, errors.New("not an approval's URL: " + req.Params.URL)
			}
			// The approver uses an instance of its own.
			mustCall(t, 200, "POST", b.url+"/api/v2/sessions/"+session+"/tool-calls/"+call+"/"+verdict, clusterKey, nil)
			return &mcp.ElicitResult{Action: "accept"}, nil
		}})
	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: a.url + "/mcp/fs", MaxRetries: -1, HTTPClient: &http.Client{Transport: lb}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s", v)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if want := []string{"fs.read", "fs.write"}; !slices.Equal(names, want) {
		t.Errorf("tools/list = %v, want %v", names, want)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.read", Arguments: map[string]any{"path": "/a"}})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "fs.read ran on /a" {
		t.Errorf("fs.read = %+v, %v", res, err)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.delete", Arguments: map[string]any{"path": "/d"}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != -32001 {
		t.Errorf("fs.delete: %v, want -32001", err)
	}
	verdict = "approve"
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.write", Arguments: map[string]any{"path": "/approved"}})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "fs.write ran on /approved" {
		t.Errorf("approved fs.write = %+v, %v", res, err)
	}
	verdict = "reject"
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.write", Arguments: map[string]any{"path": "/rejected"}})
	if !errors.As(err, &we) || we.Code != -31001 {
		t.Errorf("rejected fs.write: %v, want -31001", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"fs.read /a", "fs.write /approved"}; !slices.Equal(ran, want) {
		t.Errorf("the server ran %v, want %v", ran, want)
	}
	// Every retry was answered by the other instance than the call it retries.
	retries := 0
	for i, c := range lb.calls {
		if c.retry {
			retries++
			if i == 0 || lb.calls[i-1].instance == c.instance {
				t.Errorf("retry %d on the instance of its call: %+v", i, lb.calls)
			}
		}
	}
	if retries != 2 {
		t.Errorf("%d retries, want 2 (%+v)", retries, lb.calls)
	}
}
