//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/agentverify"
)

const (
	credAdminKey = "e2e-agentcred-admin-key-0123456789"
	credToolKey  = "e2e-agentcred-toolserver-key-01234"
	credIssuer   = "https://agentauth.e2e.test"
)

// toolServer is a sample MCP-style tool server that trusts agentauth's
// agent tokens: it verifies them offline with agentverify (the key set
// from agentauth's management listener), and, when live is set, also asks
// agentauth's introspection endpoint with its own credential.
type toolServer struct {
	verifier *agentverify.Verifier
	intro    string // agentauth's introspection URL
	live     bool
}

// ServeHTTP runs POST /tools/{tool}: 200 with who called, or 401/403 with
// the reason code.
func (ts *toolServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tool := strings.TrimPrefix(r.URL.Path, "/tools/")
	bearer, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	tok, err := ts.verifier.Verify(r.Context(), bearer)
	var ve *agentverify.Error
	switch {
	case errors.As(err, &ve):
		http.Error(w, ve.Code, http.StatusUnauthorized)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	case !tok.Permits(tool):
		http.Error(w, "tool_not_in_token", http.StatusForbidden)
		return
	}
	if ts.live {
		form := url.Values{"token": {bearer}}
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, ts.intro, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+credToolKey)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		var in struct {
			Active bool `json:"active"`
		}
		err = json.NewDecoder(res.Body).Decode(&in)
		res.Body.Close()
		if err != nil || !in.Active {
			http.Error(w, "token_inactive", http.StatusUnauthorized)
			return
		}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"user": tok.User, "agents": tok.Agents, "session": tok.Session, "tool": tool})
}

// startCredService runs agentauth in API-key mode with a TOOLSERVER role
// (tokens:introspect) for the tool server's own key; env adds variables
// (a later one replaces an earlier one of the same name).
func startCredService(t *testing.T, env ...string) *service {
	t.Helper()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "toolserver.key")
	if err := os.WriteFile(keyFile, []byte(credToolKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "agentauth.yaml")
	yaml := "auth:\n  roles:\n    - name: TOOLSERVER\n      permissions: [tokens:introspect]\n  keys:\n    - subject: fs-server\n      role: TOOLSERVER\n      keyFile: " + keyFile + "\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	seed := make([]byte, 32)
	_, _ = rand.Read(seed)
	s := startAgentauth(t, "agentauth-cred", append([]string{
		"SERVICE_CONFIG=" + cfg,
		"SERVICE_API_KEY=" + credAdminKey,
		"SERVICE_AGENT_TOKENS_ISSUER=" + credIssuer,
		"SERVICE_AGENT_TOKENS_SIGNING_KEY=" + base64.RawURLEncoding.EncodeToString(seed),
		"SERVICE_AGENT_TOKENS_MAX_TTL=10m",
	}, env...)...)
	s.waitReady(t)
	return s
}

// credCall sends a JSON request with the admin key and decodes the answer.
func credCall(t *testing.T, s *service, method, path, body string, want int) map[string]any {
	t.Helper()
	return keyCall(t, s.url, credAdminKey, method, path, body, want)
}

// keyCall calls the API at base with key, wants the status want and
// answers the JSON object it got (empty for another body).
func keyCall(t *testing.T, base, key, method, path, body string, want int) map[string]any {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, res.StatusCode, b, want)
	}
	out := map[string]any{}
	if len(b) > 0 && b[0] == '{' {
		_ = json.Unmarshal(b, &out)
	}
	return out
}

// callTool calls the sample tool server with an agent token.
func callTool(t *testing.T, url, token, tool string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/tools/"+tool, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, strings.TrimSpace(string(b))
}

// TestAgentCredentials runs the worked example of the README against the
// built binary: register a sample tool server, mint a token for an agent,
// delegate a narrower one to a sub-agent, call the tool server with both
// (it verifies offline and asks introspection), then delete the session
// and see the tokens refused live at once while an offline-only check
// still passes until expiry.
func TestAgentCredentials(t *testing.T) {
	s := startCredService(t)
	live := &toolServer{intro: s.url + "/oauth2/introspect", live: true}
	offline := &toolServer{}
	liveSrv, offlineSrv := httptest.NewServer(live), httptest.NewServer(offline)
	defer liveSrv.Close()
	defer offlineSrv.Close()
	// The audience is the tool server's resource URL, as registered (fs);
	// the offline-only copy stands for the same server.
	keys := agentverify.NewRemoteKeys(s.mgmt+"/.well-known/jwks.json", nil, time.Second)
	v, err := agentverify.New(credIssuer, liveSrv.URL, keys)
	if err != nil {
		t.Fatal(err)
	}
	live.verifier, offline.verifier = v, v

	credCall(t, s, "POST", "/api/v2/servers", `{"name":"fs","url":"`+liveSrv.URL+`"}`, 201)
	credCall(t, s, "POST", "/api/v2/tools", `{"name":"fs.read","server":"fs","read_only":true}`, 201)
	credCall(t, s, "POST", "/api/v2/tools", `{"name":"fs.write","server":"fs"}`, 201)
	credCall(t, s, "POST", "/api/v2/policies", `{"effect":"allow","tool":"fs.*","scope":"role","value":"ADMIN"}`, 201)
	session := credCall(t, s, "POST", "/api/v2/sessions", `{"title":"e2e","mode":"auto"}`, 201)["id"].(string)
	agent := credCall(t, s, "POST", "/api/v2/sessions/"+session+"/agents", `{}`, 201)["id"].(string)

	// Mint for the agent, by the server's URL.
	parent := credCall(t, s, "POST", "/api/v2/sessions/"+session+"/agents/"+agent+"/token",
		`{"audience":"`+liveSrv.URL+`","ttl":"5m"}`, 200)["access_token"].(string)
	// Delegate fs.read to a sub-agent.
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"}, "subject_token": {parent},
		"subject_token_type": {"urn:ietf:params:oauth:token-type:jwt"}, "audience": {"fs"}, "scope": {"fs.read"}, "ttl": {"2m"}}
	res, err := http.PostForm(s.url+"/oauth2/token", form)
	if err != nil {
		t.Fatal(err)
	}
	var child struct {
		AccessToken string `json:"access_token"`
	}
	err = json.NewDecoder(res.Body).Decode(&child)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 || child.AccessToken == "" {
		t.Fatalf("exchange: %d %v", res.StatusCode, err)
	}
	tests := []struct {
		name, url, token, tool string
		status                 int
		body                   string
	}{
		{"parent reads", liveSrv.URL, parent, "fs.read", 200, `"agents":["` + agent + `"]`},
		{"parent writes", liveSrv.URL, parent, "fs.write", 200, `"tool":"fs.write"`},
		{"child reads", liveSrv.URL, child.AccessToken, "fs.read", 200, `"agents":["` + agent + `","agt_`},
		{"child may not write", liveSrv.URL, child.AccessToken, "fs.write", 403, "tool_not_in_token"},
		{"no token", liveSrv.URL, "", "fs.read", 401, agentverify.ReasonMalformed},
		{"an API key is no agent token", liveSrv.URL, credAdminKey, "fs.read", 401, agentverify.ReasonMalformed},
	}
	for _, tt := range tests {
		if status, body := callTool(t, tt.url, tt.token, tt.tool); status != tt.status || !strings.Contains(body, tt.body) {
			t.Errorf("%s: %d %s, want %d with %s", tt.name, status, body, tt.status, tt.body)
		}
	}
	// A token for another server is refused by this one.
	credCall(t, s, "POST", "/api/v2/servers", `{"name":"other","url":"http://127.0.0.1:9/mcp"}`, 201)
	credCall(t, s, "POST", "/api/v2/tools", `{"name":"other.run","server":"other"}`, 201)
	credCall(t, s, "POST", "/api/v2/policies", `{"effect":"allow","tool":"other.*","scope":"role","value":"ADMIN"}`, 201)
	otherTok := credCall(t, s, "POST", "/api/v2/sessions/"+session+"/agents/"+agent+"/token", `{"audience":"other"}`, 200)["access_token"].(string)
	if status, body := callTool(t, liveSrv.URL, otherTok, "fs.read"); status != 401 || body != agentverify.ReasonAudience {
		t.Errorf("a token for another server: %d %s", status, body)
	}

	// Revoke: deleting the session ends both tokens live at once; an
	// offline-only check cannot see it and accepts them until they expire.
	credCall(t, s, "DELETE", "/api/v2/sessions/"+session, "", 204)
	for _, tok := range []string{parent, child.AccessToken} {
		if status, body := callTool(t, liveSrv.URL, tok, "fs.read"); status != 401 || body != "token_inactive" {
			t.Errorf("after revocation, live: %d %s, want 401 token_inactive", status, body)
		}
		if status, _ := callTool(t, offlineSrv.URL, tok, "fs.read"); status != 200 {
			t.Errorf("after revocation, offline only: %d, want 200 (it cannot see the deletion)", status)
		}
	}
	if _, err := v.Verify(context.Background(), parent); err != nil {
		t.Errorf("offline verify after revocation: %v", err)
	}
}
