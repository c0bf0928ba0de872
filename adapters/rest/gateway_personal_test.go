package rest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang/mock/gomock"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
)

// personalUpstream is an MCP server (official Go SDK, sessions of 2025)
// that acts on the account its Bearer token names: it takes tokens
// "at-for-<person>" and answers gh.whoami with that person; it records
// every Authorization it got.
type personalUpstream struct {
	url   string
	mu    sync.Mutex
	auths []string
}

func (u *personalUpstream) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.auths)
}

func newPersonalUpstream(t *testing.T) *personalUpstream {
	u := &personalUpstream{}
	server := mcp.NewServer(&mcp.Implementation{Name: "gh-upstream", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "gh.whoami", Description: "who the token names"},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			who := strings.TrimPrefix(req.Extra.Header.Get("Authorization"), "Bearer at-for-")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you are " + who}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get("Authorization")
		u.mu.Lock()
		u.auths = append(u.auths, a)
		u.mu.Unlock()
		if !strings.HasPrefix(a, "Bearer at-for-") {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	u.url = srv.URL
	return u
}

// codeAS is an authorization server whose codes are the person's name:
// the code "uma" is redeemed for the access token "at-for-uma".
func codeAS(t *testing.T) ports.UpstreamAuthorizer {
	m := mocks.NewMockUpstreamAuthorizer(gomock.NewController(t))
	m.EXPECT().Discover(gomock.Any(), gomock.Any()).Return(ports.UpstreamAS{Issuer: "https://as.example/", AuthURL: "https://as.example/authorize",
		TokenURL: "https://as.example/token", RevocationURL: "https://as.example/revoke", ClientID: "agentauth"}, nil).AnyTimes()
	m.EXPECT().AuthCodeURL(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(func(as ports.UpstreamAS, state, _, redirect string) string {
		return as.AuthURL + "?" + url.Values{"state": {state}, "redirect_uri": {redirect}}.Encode()
	}).AnyTimes()
	m.EXPECT().ExchangeCode(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
		func(_ context.Context, _ ports.UpstreamAS, code, _, _ string) (ports.UpstreamTokens, error) {
			return ports.UpstreamTokens{AccessToken: "at-for-" + code, RefreshToken: "rt-for-" + code, Expiry: time.Now().Add(time.Hour), Subject: code}, nil
		}).AnyTimes()
	m.EXPECT().Revoke(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).Return(true, nil).AnyTimes()
	return m
}

// TestGatewayPersonalCredentials: a server registered with upstream_auth
// receives each person's own token. A person who has not connected is
// refused before anything is forwarded, with the URL to connect at (in
// the error's data; a 2026-07-28 client that opens URLs gets it as an
// input_required); once connected, their agent's calls carry their token
// and never another person's; a suspended person's, or a removed
// connection's, are refused at once. Each call's audit record says whose
// credential went, never the token.
func TestGatewayPersonalCredentials(t *testing.T) {
	up := newPersonalUpstream(t)
	h := gwStart(t, axOptions{upstream: codeAS(t)}, 10*time.Second)
	apollo, _ := axTeam(t, h)
	h.must(t, 201, "adm", "POST", "/api/v2/servers", `{"name":"fs","url":"`+gwResourceBase+`/mcp/fs","endpoint":"`+up.url+`",`+
		`"upstream_auth":{"type":"oauth2","issuer":"https://as.example/","client_id":"agentauth"}}`)
	h.must(t, 201, "adm", "POST", "/api/v2/tools", `{"name":"gh.whoami","server":"fs","read_only":true}`)
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"allow","tool":"*","scope":"role","value":"USER"}`)
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"allow","tool":"*","scope":"role","value":"LEAD"}`)
	agentOf := func(subject string) (session, agent, token string) {
		session = h.must(t, 201, subject, "POST", "/api/v2/sessions", `{"title":"s","project":"`+apollo+`","mode":"auto"}`)["id"].(string)
		agent = h.must(t, 201, subject, "POST", "/api/v2/sessions/"+session+"/agents", "")["id"].(string)
		token = h.must(t, 200, subject, "POST", "/api/v2/sessions/"+session+"/agents/"+agent+"/token", `{"audience":"fs"}`)["access_token"].(string)
		return session, agent, token
	}
	_, _, uma := agentOf("uma")
	_, _, lea := agentOf("lea")

	notConnected := func(t *testing.T, status int, body []byte) {
		t.Helper()
		var m struct {
			Error struct {
				Code int `json:"code"`
				Data struct {
					Reason     string `json:"reason_code"`
					ConnectURL string `json:"connect_url"`
				} `json:"data"`
			} `json:"error"`
		}
		_ = json.Unmarshal(lastMessage(body), &m)
		if status != 200 || m.Error.Code != mcpwire.CodeDenied || m.Error.Data.Reason != domain.ReasonUpstreamNotConnected ||
			m.Error.Data.ConnectURL != "http://agentauth.test/connect/fs" {
			t.Errorf("%d %s: want -32001 upstream_not_connected with the connect URL", status, body)
		}
	}

	// Not connected: refused before anything reaches the server.
	status, _, body := gwPost(t, h, "fs", lea, "", gwInitialize)
	notConnected(t, status, body)
	status, _, _, body = gw2026Post(t, h, lea, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gh.whoami","arguments":{},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, "Mcp-Name: gh.whoami")
	notConnected(t, status, body)
	// A 2026-07-28 client that opens URLs is asked to open the connect URL.
	status, _, _, body = gw2026Post(t, h, lea, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"gh.whoami","arguments":{},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}}}}`,
		"Mcp-Name: gh.whoami")
	var ir struct {
		Result struct {
			ResultType    string `json:"resultType"`
			InputRequests map[string]struct {
				Method string `json:"method"`
				Params struct {
					Mode, URL string
				} `json:"params"`
			} `json:"inputRequests"`
		} `json:"result"`
	}
	_ = json.Unmarshal(lastMessage(body), &ir)
	if req := ir.Result.InputRequests["agentauth_connect"]; status != 200 || ir.Result.ResultType != "input_required" || req.Method != "elicitation/create" ||
		req.Params.Mode != "url" || req.Params.URL != "http://agentauth.test/connect/fs" {
		t.Errorf("a 2026 client that opens URLs: %d %s; want input_required with the connect URL", status, body)
	}
	if got := up.seen(); len(got) != 0 {
		t.Fatalf("the server was reached without a person's token: %q", got)
	}

	// uma connects; her agent's calls carry her token, lea's still none.
	q := func() url.Values {
		r := h.do(t, "uma", "GET", "/connect/fs", "")
		loc, _ := url.Parse(r.location)
		return loc.Query()
	}()
	if r := h.do(t, "uma", "GET", "/connect/fs/callback?state="+url.QueryEscape(q.Get("state"))+"&code=uma", ""); r.status != 303 {
		t.Fatalf("callback = %d %s", r.status, r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, version := range []string{gwLegacy, ""} {
		cs, err := gwConnect(ctx, h, "fs", uma, version)
		if err != nil {
			t.Fatalf("connect at %q: %v", version, err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "gh.whoami", Arguments: map[string]any{}})
		if err != nil || toolText(t, res) != "you are uma" {
			t.Errorf("uma's agent at %q: %+v, %v; want the server to see uma", version, res, err)
		}
		_ = cs.Close()
	}
	status, _, body = gwPost(t, h, "fs", lea, "", gwInitialize)
	notConnected(t, status, body)
	for _, a := range up.seen() {
		if a != "Bearer at-for-uma" {
			t.Errorf("the server got %q; want uma's token only", a)
		}
	}

	// Suspended (an ADMIN disabled her): her agent's calls reach the
	// server no more, whatever the method.
	h.must(t, 204, "adm", "PUT", "/api/v2/key-owners/uma", `{"disabled":true}`)
	before := len(up.seen())
	status, _, body = gwPost(t, h, "fs", uma, "", gwInitialize)
	if !strings.Contains(string(body), domain.ReasonUpstreamNotConnected) || !strings.Contains(string(body), "uma is suspended") || len(up.seen()) != before {
		t.Errorf("uma suspended, her agent's initialize: %d %s (%d requests reached the server); want it refused before the server", status, body, len(up.seen())-before)
	}
	h.must(t, 204, "adm", "PUT", "/api/v2/key-owners/uma", `{"disabled":false}`)

	// Her connection removed: refused at once.
	h.must(t, 204, "uma", "DELETE", "/api/v2/connections/fs", "")
	status, _, body = gwPost(t, h, "fs", uma, "", gwInitialize)
	notConnected(t, status, body)

	recs, err := h.store.QueryAudit(context.Background(), ports.AuditQuery{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	used := false
	for _, r := range recs {
		if strings.Contains(r.Reason, "at-for-") || strings.Contains(r.Reason, "rt-for-") {
			t.Errorf("an audit record holds a token: %s", r.Reason)
		}
		if n, ok := domain.ParseGatewayCall(r.Reason); ok && n.Tool == "gh.whoami" && n.Credential == "connection of uma" && n.Upstream == 200 {
			used = true
		}
	}
	if !used {
		t.Error("no audit record of uma's call names her connection")
	}
}
