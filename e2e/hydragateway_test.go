//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// TestHydraGatewayResource: an MCP client of Ory Hydra signs alice in
// asking for the gateway resource of server fs (Hydra's audience
// parameter, RFC 8707's resource): the access token names only
// {gateway.resourceURL}/mcp/fs, not agentauth's client. agentauth admits
// it for that endpoint alone: the official MCP Go SDK client, acting for
// alice's agent, lists and calls fs.read through the gateway while a
// hidden tool is refused (the server never sees the token); the API and another server's endpoint answer
// 403 token_audience_gateway_only. A token for a near miss of the
// resource (/mcpx/fs) is not admitted at all.
func TestHydraGatewayResource(t *testing.T) {
	port := freePort(t)
	op := startHydra(t, "jwt", port)
	creds := t.TempDir()
	if err := os.WriteFile(filepath.Join(creds, "fs-token"), []byte(mcpUpstreamSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startService(t, &idp{issuer: op.issuer, servicePort: port}, port, "SERVICE_OIDC_PROVIDER=generic",
		"SERVICE_OIDC_CLIENT_ID="+hydraClient, "SERVICE_OIDC_CLIENT_SECRET="+hydraSecret, "SERVICE_OIDC_ROLES_CLAIM=ext.roles",
		"SERVICE_GATEWAY_CREDENTIALS_DIR="+creds)
	s.waitReady(t)
	u := startMCPUpstream(t)
	resource := s.url + "/mcp/fs" // gateway.resourceURL defaults to the API's URL
	t.Logf("provider: Ory Hydra %s at %s; gateway resource %s", hydraPeer.version, op.issuer, resource)

	// alice (ADMIN), with a token of agentauth's own client, sets the
	// gateway up.
	session, agent := setUpGateway(t, s, op.codeFlow(t, port, "alice").AccessToken, u.url, resource)

	// The MCP client: another client of Hydra, allowed the gateway
	// resource (and the near miss, to show it is refused by agentauth).
	client := map[string]any{"client_id": "mcp-client", "client_secret": "mcp-client-e2e-secret", "token_endpoint_auth_method": "client_secret_basic",
		"grant_types": []string{"authorization_code", "client_credentials"}, "response_types": []string{"code"}, "scope": "openid profile",
		"redirect_uris": []string{fmt.Sprintf("http://127.0.0.1:%d/auth/callback", port)}, "audience": []string{resource, s.url + "/mcpx/fs"}}
	if st, body := op.call(t, http.MethodPost, "/admin/clients", client); st != http.StatusCreated {
		t.Fatalf("create the MCP client at Hydra: %d %s", st, body)
	}
	tok := op.codeFlowOf(t, "mcp-client", "mcp-client-e2e-secret", port, "alice", oauth2.SetAuthURLParam("audience", resource)).AccessToken
	if c := payloadClaims(t, tok); !slices.Equal(audienceOf(c["aud"]), []string{resource}) || c["client_id"] != "mcp-client" {
		t.Fatalf("Hydra's token: aud %v, client_id %v; want [%s], mcp-client", c["aud"], c["client_id"], resource)
	}

	cc := clientcredentials.Config{ClientID: "mcp-client", ClientSecret: "mcp-client-e2e-secret", TokenURL: op.issuer + "oauth2/token",
		AuthStyle: oauth2.AuthStyleInHeader, EndpointParams: url.Values{"audience": {s.url + "/mcpx/fs"}}}
	nearMiss, err := cc.Token(t.Context())
	if err != nil {
		t.Fatalf("client_credentials token for /mcpx/fs: %v", err)
	}
	checkGatewayResourceToken(t, s, u, resource, tok, session, agent,
		gatewayRefusal{"a near miss of the resource (/mcpx/fs)", nearMiss.AccessToken, http.MethodPost, "/mcp/fs", http.StatusUnauthorized, "oidc_token_audience"})
}

// setUpGateway has ADMIN (by the Bearer token admin) turn the security
// gateway on (unregistered tools hidden), register server fs at resource
// with upstream endpoint and the credential fs-token, another server, the
// tool fs.read allowed to ADMIN, and start a session with one agent.
func setUpGateway(t *testing.T, s *service, admin, endpoint, resource string) (session, agent string) {
	t.Helper()
	call := func(method, path, body string, want int) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, s.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		st, b := do(t, noRedirects(nil), req)
		out := map[string]any{}
		if st != want || json.Unmarshal([]byte(b), &out) != nil {
			t.Fatalf("%s %s = %d %s, want %d", method, path, st, b, want)
		}
		return out
	}
	call("PUT", "/api/v2/admin/settings", `{"security_gateway":true,"default_session_mode":"auto"}`, 200)
	call("POST", "/api/v2/servers", `{"name":"fs","url":"`+resource+`","endpoint":"`+endpoint+`","credential":"fs-token"}`, 201)
	call("POST", "/api/v2/servers", `{"name":"other","url":"http://127.0.0.1:9/mcp"}`, 201)
	call("POST", "/api/v2/tools", `{"name":"fs.read","server":"fs","read_only":true}`, 201)
	call("POST", "/api/v2/policies", `{"effect":"allow","tool":"fs.*","scope":"role","value":"ADMIN"}`, 201)
	session = call("POST", "/api/v2/sessions", `{"title":"e2e","mode":"auto"}`, 201)["id"].(string)
	agent = call("POST", "/api/v2/sessions/"+session+"/agents", `{}`, 201)["id"].(string)
	return session, agent
}

// gatewayRefusal is a request with a token that agentauth must refuse.
type gatewayRefusal struct {
	name, token, method, path string
	status                    int
	reason                    string
}

// checkGatewayResourceToken: with tok, an access token for alice's agent
// whose audience is only the gateway resource of fs, the official MCP Go
// SDK client lists and calls fs.read through the gateway while a hidden
// tool is refused (the server never sees the token); the API and another
// server's endpoint answer 403 token_audience_gateway_only; so do the
// extra cases.
func checkGatewayResourceToken(t *testing.T, s *service, u *mcpUpstream, resource, tok, session, agent string, extra ...gatewayRefusal) {
	t.Helper()
	t.Run("the Go SDK through the gateway", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		h := map[string]string{"Authorization": "Bearer " + tok, "X-Agentauth-Session": session, "X-Agentauth-Agent": agent}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-resource-client", Version: "1.0.0"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: resource, MaxRetries: -1, HTTPClient: &http.Client{Transport: withHeaders{h, http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer cs.Close()
		list, err := cs.ListTools(ctx, nil)
		if err != nil || len(list.Tools) != 1 || list.Tools[0].Name != "fs.read" {
			t.Fatalf("tools/list = %+v, %v; want fs.read", list, err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.read", Arguments: map[string]any{"path": "/resource"}})
		if err != nil || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "fs.read ran on /resource" {
			t.Fatalf("fs.read = %+v, %v", res, err)
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.delete", Arguments: map[string]any{"path": "/resource"}}); err == nil {
			t.Errorf("fs.delete (unregistered, hidden) was not refused")
		}
		u.mu.Lock()
		defer u.mu.Unlock()
		if !slices.Equal(u.calls, []string{"fs.read /resource"}) {
			t.Errorf("the server ran %q, want fs.read /resource only", u.calls)
		}
		if u.auths["Bearer "+tok] || !u.auths["Bearer "+mcpUpstreamSecret] {
			t.Errorf("the server saw the caller's token, or not agentauth's credential: %d Authorization values", len(u.auths))
		}
	})
	tests := append([]gatewayRefusal{
		{"the API", tok, http.MethodGet, "/api/v2/me", http.StatusForbidden, "token_audience_gateway_only"},
		{"a session through the API", tok, http.MethodGet, "/api/v2/sessions/" + session, http.StatusForbidden, "token_audience_gateway_only"},
		{"another server's gateway endpoint", tok, http.MethodPost, "/mcp/other", http.StatusForbidden, "token_audience_gateway_only"},
	}, extra...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, s.url+tt.path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`))
			req.Header.Set("Authorization", "Bearer "+tt.token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("X-Agentauth-Session", session)
			req.Header.Set("X-Agentauth-Agent", agent)
			st, body := do(t, noRedirects(nil), req)
			var e struct {
				Error struct {
					ReasonCode string `json:"reason_code"`
				} `json:"error"`
			}
			if _ = json.Unmarshal([]byte(body), &e); st != tt.status || e.Error.ReasonCode != tt.reason {
				t.Errorf("%s %s = %d %s, want %d %s", tt.method, tt.path, st, body, tt.status, tt.reason)
			}
		})
	}
}

// withHeaders adds headers to every request.
type withHeaders struct {
	h    map[string]string
	next http.RoundTripper
}

func (w withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range w.h {
		r.Header.Set(k, v)
	}
	return w.next.RoundTrip(r)
}

// audienceOf reads an aud claim: a string or an array of strings.
func audienceOf(v any) []string {
	switch a := v.(type) {
	case string:
		return []string{a}
	case []any:
		var out []string
		for _, e := range a {
			s, _ := e.(string)
			out = append(out, s)
		}
		return out
	}
	return nil
}
