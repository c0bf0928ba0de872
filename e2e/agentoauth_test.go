//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	jwxjwt "github.com/lestrrat-go/jwx/v3/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/agentverify"
)

// oauthSetup is an agentauth with its public listener, two registered
// tool servers and agent tokens for them.
type oauthSetup struct {
	s                  *service
	issuer             string
	resource, other    string // the registered servers' resource URLs
	parent, otherToken string // agent tokens for resource (fs.read fs.write) and other
	metadata           struct {
		Issuer                string `json:"issuer"`
		JWKSURI               string `json:"jwks_uri"`
		TokenEndpoint         string `json:"token_endpoint"`
		IntrospectionEndpoint string `json:"introspection_endpoint"`
	}
}

func startOAuthSetup(t *testing.T) *oauthSetup {
	t.Helper()
	pub, mcpPort := freePort(t), freePort(t)
	o := &oauthSetup{issuer: fmt.Sprintf("http://127.0.0.1:%d", pub), resource: fmt.Sprintf("http://127.0.0.1:%d/mcp", mcpPort),
		other: "http://127.0.0.1:9/mcp"}
	o.s = startCredService(t, fmt.Sprintf("SERVICE_PUBLIC_PORT=%d", pub), "SERVICE_AGENT_TOKENS_ISSUER="+o.issuer)
	credCall(t, o.s, "POST", "/api/v2/servers", `{"name":"fs","url":"`+o.resource+`"}`, 201)
	credCall(t, o.s, "POST", "/api/v2/servers", `{"name":"other","url":"`+o.other+`"}`, 201)
	for _, tool := range []string{"fs.read", "fs.write", "other.run"} {
		credCall(t, o.s, "POST", "/api/v2/tools", `{"name":"`+tool+`","server":"`+strings.Split(tool, ".")[0]+`"}`, 201)
	}
	credCall(t, o.s, "POST", "/api/v2/policies", `{"effect":"allow","tool":"*","scope":"role","value":"ADMIN"}`, 201)
	session := credCall(t, o.s, "POST", "/api/v2/sessions", `{"title":"oauth","mode":"auto"}`, 201)["id"].(string)
	agent := credCall(t, o.s, "POST", "/api/v2/sessions/"+session+"/agents", `{}`, 201)["id"].(string)
	mint := func(audience string) string {
		return credCall(t, o.s, "POST", "/api/v2/sessions/"+session+"/agents/"+agent+"/token", `{"audience":"`+audience+`","ttl":"5m"}`, 200)["access_token"].(string)
	}
	o.parent, o.otherToken = mint("fs"), mint(o.other)
	// Discovery, as any RFC 8414 client does it: no credential.
	res, err := http.Get(o.issuer + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(&o.metadata); err != nil || res.StatusCode != 200 || o.metadata.Issuer != o.issuer {
		t.Fatalf("metadata: %d %v %+v, want issuer %s", res.StatusCode, err, o.metadata, o.issuer)
	}
	return o
}

// TestAgentTokensWithRealLibraries drives agentauth's agent tokens with
// libraries nobody here wrote, through their documented calls: in Go,
// go-jose v4 and lestrrat-go/jwx v3 verifying tokens from the published
// metadata and key set, and the MCP Go SDK's bearer-token middleware; in
// Node (e2e/js/oauth), openid-client, jose and the MCP TypeScript SDK.
func TestAgentTokensWithRealLibraries(t *testing.T) {
	o := startOAuthSetup(t)
	ctx := context.Background()

	t.Run("go-jose verifies", func(t *testing.T) {
		res, err := http.Get(o.metadata.JWKSURI)
		if err != nil {
			t.Fatal(err)
		}
		var set jose.JSONWebKeySet
		err = json.NewDecoder(res.Body).Decode(&set)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		tok, err := josejwt.ParseSigned(o.parent, []jose.SignatureAlgorithm{jose.EdDSA})
		if err != nil {
			t.Fatal(err)
		}
		if typ := tok.Headers[0].ExtraHeaders[jose.HeaderType]; typ != "at+jwt" {
			t.Errorf("typ %v, want at+jwt", typ)
		}
		keys := set.Key(tok.Headers[0].KeyID)
		if len(keys) != 1 {
			t.Fatalf("key %s: %d in the set", tok.Headers[0].KeyID, len(keys))
		}
		var claims struct {
			josejwt.Claims
			ClientID string `json:"client_id"`
			Scope    string `json:"scope"`
		}
		if err := tok.Claims(keys[0].Key, &claims); err != nil {
			t.Fatal(err)
		}
		if err := claims.Validate(josejwt.Expected{Issuer: o.metadata.Issuer, AnyAudience: josejwt.Audience{o.resource}, Time: time.Now()}); err != nil ||
			claims.ClientID == "" || claims.Scope != "fs.read fs.write" {
			t.Errorf("claims %+v: %v", claims, err)
		}
	})

	t.Run("jwx verifies", func(t *testing.T) {
		set, err := jwk.Fetch(ctx, o.metadata.JWKSURI)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jwxjwt.Parse([]byte(o.parent), jwxjwt.WithKeySet(set), jwxjwt.WithIssuer(o.metadata.Issuer), jwxjwt.WithAudience(o.resource),
			jwxjwt.WithAcceptableSkew(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var clientID, scope string
		if err := tok.Get("client_id", &clientID); err != nil || clientID == "" {
			t.Errorf("client_id %q: %v", clientID, err)
		}
		if err := tok.Get("scope", &scope); err != nil || scope != "fs.read fs.write" {
			t.Errorf("scope %q: %v", scope, err)
		}
		msg, err := jws.Parse([]byte(o.parent))
		if err != nil {
			t.Fatal(err)
		}
		if typ, _ := msg.Signatures()[0].ProtectedHeaders().Type(); typ != "at+jwt" {
			t.Errorf("typ %q, want at+jwt", typ)
		}
		if _, err := jwxjwt.Parse([]byte(o.otherToken), jwxjwt.WithKeySet(set), jwxjwt.WithIssuer(o.metadata.Issuer), jwxjwt.WithAudience(o.resource)); err == nil {
			t.Error("a token for another server verified for this one")
		}
	})

	t.Run("MCP Go SDK RequireBearerToken", func(t *testing.T) {
		// A verifier from the published metadata alone, agentverify doing
		// the checks; the token's scope is the SDK's Scopes as it is.
		v, err := agentverify.New(o.metadata.Issuer, o.resource, agentverify.NewRemoteKeys(o.metadata.JWKSURI, nil, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		verifier := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
			tok, err := v.Verify(ctx, token)
			var ve *agentverify.Error
			if errors.As(err, &ve) {
				return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, ve.Code)
			}
			if err != nil {
				return nil, err
			}
			return &auth.TokenInfo{Scopes: tok.Tools, Expiration: tok.Expires, UserID: tok.User, Extra: map[string]any{"agent": tok.Agent()}}, nil
		}
		// An MCP server with one tool, behind the SDK's middleware.
		type caller struct {
			User   string   `json:"user"`
			Agent  string   `json:"agent"`
			Scopes []string `json:"scopes"`
		}
		server := mcp.NewServer(&mcp.Implementation{Name: "fs", Version: "1.0.0"}, nil)
		mcp.AddTool(server, &mcp.Tool{Name: "fs.read", Description: "read a file"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, caller, error) {
			info := req.Extra.TokenInfo
			return nil, caller{User: info.UserID, Agent: info.Extra["agent"].(string), Scopes: info.Scopes}, nil
		})
		handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
		srv := httptest.NewServer(auth.RequireBearerToken(verifier, &auth.RequireBearerTokenOptions{Scopes: []string{"fs.read"}})(handler))
		defer srv.Close()

		// The SDK's client, the agent token as its Bearer credential.
		client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1.0.0"}, nil)
		session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearer(o.parent)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "fs.read", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		_ = session.Close()
		var who caller
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &who); err != nil || who.User == "" || who.Agent == "" || !slices.Equal(who.Scopes, []string{"fs.read", "fs.write"}) {
			t.Errorf("fs.read answered %s (%v), want the user, the agent and the token's scopes", b, err)
		}
		// The middleware's refusals.
		for _, tt := range []struct {
			name, token string
			status      int
		}{
			{"a token for another server", o.otherToken, 401},
			{"no token", "", 401},
			{"not a token", "x.y.z", 401},
		} {
			req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tt.status {
				t.Errorf("%s: %d %s, want %d", tt.name, res.StatusCode, b, tt.status)
			}
		}
	})

	t.Run("node: openid-client, jose, MCP TypeScript SDK", func(t *testing.T) {
		if _, err := exec.LookPath("node"); err != nil {
			t.Fatal("node is required (see .ci/deps)")
		}
		if _, err := os.Stat("js/node_modules/openid-client"); err != nil {
			t.Fatal("e2e/js/node_modules is missing: run `cd e2e/js && npm ci`")
		}
		cmd := exec.Command("node", "--test", "--test-reporter=spec", "oauth/")
		cmd.Dir = "js"
		cmd.Env = append(os.Environ(), "AGENTAUTH_ISSUER="+o.issuer, "PARENT_TOKEN="+o.parent, "TOOLSERVER_KEY="+credToolKey,
			"RESOURCE="+o.resource, "OTHER_RESOURCE="+o.other, "OTHER_TOKEN="+o.otherToken)
		out, err := cmd.CombinedOutput()
		t.Logf("node --test oauth/:\n%s", out)
		if err != nil {
			t.Fatalf("node tests failed: %v", err)
		}
	})
}

// bearer is a transport that sends token as the Bearer credential, as an
// MCP client's HTTP client does.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}
