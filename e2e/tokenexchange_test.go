//go:build e2e

package e2e

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

	"github.com/Nerzal/gocloak/v13"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// exchangeUpstream is an MCP server (the official Go SDK) behind
// Keycloak: it takes a Bearer token only when Keycloak's introspection,
// asked with the audience client's own credentials, says it is active and
// issued to that audience; billing.whoami answers its sub, aud and azp.
// It records every token it was sent.
type exchangeUpstream struct {
	url    string
	mu     sync.Mutex
	tokens []string
}

type kcIntrospection struct {
	Active bool     `json:"active"`
	Sub    string   `json:"sub"`
	Azp    string   `json:"azp"`
	Aud    audience `json:"aud"`
}

// audience reads an aud claim: a string or an array of strings.
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*a = []string{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(a))
}

func startExchangeUpstream(t *testing.T, p *idp, aud, secret string) *exchangeUpstream {
	t.Helper()
	u := &exchangeUpstream{}
	introspect := func(token string) kcIntrospection {
		req, _ := http.NewRequest(http.MethodPost, p.issuer+"/protocol/openid-connect/token/introspect", strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.SetBasicAuth(aud, secret)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return kcIntrospection{}
		}
		defer resp.Body.Close()
		var ti kcIntrospection
		_ = json.NewDecoder(resp.Body).Decode(&ti)
		return ti
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "billing-upstream", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "billing.whoami", Description: "who the token is for"},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			ti := introspect(strings.TrimPrefix(req.Extra.Header.Get("Authorization"), "Bearer "))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sub " + ti.Sub + " aud " + strings.Join(ti.Aud, ",") + " azp " + ti.Azp}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ok {
			u.mu.Lock()
			u.tokens = append(u.tokens, tok)
			u.mu.Unlock()
		}
		if ti := introspect(tok); !ok || !ti.Active || !slices.Contains(ti.Aud, aud) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	u.url = srv.URL
	return u
}

func (u *exchangeUpstream) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.tokens)
}

// exchangeScope makes Keycloak able to exchange agentauth's tokens for
// aud: standard token exchange on agentauth's client, and an optional
// client scope of it, named scope, whose audience mapper adds aud (Keycloak
// 26 adds an audience to an exchanged token only through the requester's
// client scopes). All of it is taken back when the test ends.
func exchangeScope(t *testing.T, p *idp, scope, aud string) {
	t.Helper()
	setClientAttribute(t, p, clientID, "standard.token.exchange.enabled", "true")
	createClient(t, p, realmName, aud, "")
	kc, token := kcAdminAPI(t, p)
	ctx := context.Background()
	scopeID, err := kc.CreateClientScope(ctx, token, realmName, gocloak.ClientScope{Name: gocloak.StringP(scope), Protocol: gocloak.StringP("openid-connect"),
		ProtocolMappers: &[]gocloak.ProtocolMappers{{Name: gocloak.StringP(aud + " audience"), Protocol: gocloak.StringP("openid-connect"),
			ProtocolMapper: gocloak.StringP("oidc-audience-mapper"), ProtocolMappersConfig: &gocloak.ProtocolMappersConfig{
				IncludedClientAudience: gocloak.StringP(aud), AccessTokenClaim: gocloak.StringP("true"), IDTokenClaim: gocloak.StringP("false")}}}})
	if err != nil {
		t.Fatalf("create client scope %s: %v", scope, err)
	}
	clients, err := kc.GetClients(ctx, token, realmName, gocloak.GetClientsParams{ClientID: gocloak.StringP(clientID)})
	if err != nil || len(clients) != 1 {
		t.Fatalf("find client %s: %v %v", clientID, clients, err)
	}
	id := *clients[0].ID
	if err := kc.AddOptionalScopeToClient(ctx, token, realmName, id, scopeID); err != nil {
		t.Fatalf("add scope %s to %s: %v", scope, clientID, err)
	}
	t.Cleanup(func() {
		kc, token := kcAdminAPI(t, p)
		if err := kc.RemoveOptionalScopeFromClient(ctx, token, realmName, id, scopeID); err != nil {
			t.Errorf("remove scope %s from %s: %v", scope, clientID, err)
		}
		if err := kc.DeleteClientScope(ctx, token, realmName, scopeID); err != nil {
			t.Errorf("delete client scope %s: %v", scope, err)
		}
	})
}

// billingWhoami calls billing.whoami through s's gateway as the Go SDK's
// client, with headers on every request.
func billingWhoami(ctx context.Context, s *service, headers map[string]string) (string, error) {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-exchange", Version: "1.0.0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: s.url + "/mcp/billing", MaxRetries: -1,
			HTTPClient: &http.Client{Transport: withHeaders{headers, http.DefaultTransport}}}, nil)
	if err != nil {
		return "", err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "billing.whoami", Arguments: map[string]any{}})
	if err != nil {
		return "", err
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

// TestTokenExchangeKeycloak: a server registered with upstream_auth type
// token_exchange, behind the real Keycloak 26.7.3 with standard token
// exchange (V2) on agentauth's client. Each message goes upstream with a
// token Keycloak issued for the server's audience on the person's behalf
// (RFC 8693): active at Keycloak's introspection asked by the audience,
// its sub the person, its aud the audience, its azp agentauth; never the
// person's own token. The person's token is their provider Bearer token
// when the caller presents one, else that of their login session; an
// agent whose owner has neither is refused upstream_not_connected with the
// sign-in URL. An exchanged token is kept until shortly before it
// expires.
func TestTokenExchangeKeycloak(t *testing.T) {
	p := keycloak(t)
	const aud, scope = "billing-api", "billing"
	exchangeScope(t, p, scope, aud)
	up := startExchangeUpstream(t, p, aud, aud+"-e2e-secret")
	s := startService(t, p, 0)
	s.waitReady(t)
	alice := grant(t, p, realmName, clientID, clientSecret, "alice", "alice-pw").AccessToken
	api(t, s, alice, "POST", "/api/v2/servers", `{"name":"billing","url":"`+s.url+`/mcp/billing","endpoint":"`+up.url+`",`+
		`"upstream_auth":{"type":"token_exchange","audience":"`+aud+`","scopes":["`+scope+`"]}}`, 201)
	api(t, s, alice, "POST", "/api/v2/tools", `{"name":"billing.whoami","server":"billing","read_only":true}`, 201)
	for _, role := range []string{"ADMIN", "USER"} {
		api(t, s, alice, "POST", "/api/v2/policies", `{"effect":"allow","tool":"billing.*","scope":"role","value":"`+role+`"}`, 201)
	}
	session := api(t, s, alice, "POST", "/api/v2/sessions", `{"title":"exchange","mode":"auto"}`, 201)["id"].(string)
	agent := api(t, s, alice, "POST", "/api/v2/sessions/"+session+"/agents", `{}`, 201)["id"].(string)
	agentToken := api(t, s, alice, "POST", "/api/v2/sessions/"+session+"/agents/"+agent+"/token", `{"audience":"billing"}`, 200)["access_token"].(string)
	aliceID := userID(t, p, "alice")
	// Keycloak issues the exchanged token to the audience asked for, and
	// keeps the audiences the requester client's own mappers add (the
	// realm maps agentauth onto its tokens).
	exchanged := func(got string) bool {
		sub, rest, _ := strings.Cut(strings.TrimPrefix(got, "sub "), " aud ")
		auds, azp, _ := strings.Cut(rest, " azp ")
		return sub == aliceID && slices.Contains(strings.Split(auds, ","), aud) && azp == clientID
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Logf("Keycloak %s at %s: agentauth's client exchanges for %s (optional scope %s)", "26.7.3", p.issuer, aud, scope)

	t.Run("the agent of a person without a login session", func(t *testing.T) {
		_, err := billingWhoami(ctx, s, map[string]string{"Authorization": "Bearer " + agentToken})
		if err == nil || !strings.Contains(err.Error(), "not connected to server billing") || !strings.Contains(err.Error(), s.url+"/auth/login") {
			t.Errorf("%v; want upstream_not_connected naming the sign-in URL", err)
		}
		if len(up.seen()) != 0 {
			t.Errorf("the server got %d tokens", len(up.seen()))
		}
	})
	t.Run("the person's Bearer token, exchanged", func(t *testing.T) {
		// An MCP client's token for the gateway resource (RFC 8707), which
		// agentauth's client may exchange (it names it too).
		createClient(t, p, realmName, "mcp-exchange-client", s.url+"/mcp/billing", clientID)
		bearer := grant(t, p, realmName, "mcp-exchange-client", "mcp-exchange-client-e2e-secret", "alice", "alice-pw").AccessToken
		h := map[string]string{"Authorization": "Bearer " + bearer, "X-Agentauth-Session": session, "X-Agentauth-Agent": agent}
		got, err := billingWhoami(ctx, s, h)
		if err != nil || !exchanged(got) {
			t.Fatalf("%q, %v; want a token for %s of alice, its azp %s", got, err, aud, clientID)
		}
		if slices.Contains(up.seen(), bearer) {
			t.Error("the server got alice's own token")
		}
	})
	t.Run("the agent of a person signed in, with the login session's token", func(t *testing.T) {
		if st, _, body := passwordLogin(t, s, "alice", "alice-pw"); st != http.StatusOK {
			t.Fatalf("password login: %d %s", st, body)
		}
		before := len(up.seen())
		var lastWhoami string
		for range 2 {
			got, err := billingWhoami(ctx, s, map[string]string{"Authorization": "Bearer " + agentToken})
			lastWhoami = got
			if err != nil || !exchanged(got) {
				t.Fatalf("%q, %v; want a token for %s of alice, its azp %s", got, err, aud, clientID)
			}
		}
		t.Logf("the server saw: %s", lastWhoami)
		seen := up.seen()[before:]
		if len(seen) < 2 || slices.Contains(seen, alice) {
			t.Fatalf("the server got %d tokens (alice's own among them: %t)", len(seen), slices.Contains(seen, alice))
		}
		for _, tok := range seen[1:] {
			if tok != seen[0] {
				t.Error("the exchanged token was not kept: the server got another one within its lifetime")
			}
		}
	})
	t.Run("audited without a token", func(t *testing.T) {
		audit := auditText(t, s, alice)
		for _, w := range []string{"credential token exchange for " + aliceID, "credential token exchange for " + aliceID + " (kept)"} {
			if !strings.Contains(audit, w) {
				t.Errorf("no audit record says %q", w)
			}
		}
		noTokens(t, append(up.seen(), alice), "", strings.Join(s.proc.output(), "\n"), audit)
	})
}
