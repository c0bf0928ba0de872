package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentauth/agentauth/adapters/agenttoken"
	"github.com/agentauth/agentauth/adapters/auditjson"
	"github.com/agentauth/agentauth/agentverify"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// The resource URLs (audiences) of the harness's servers fs and sh.
const (
	fsURL = "http://127.0.0.1:7/mcp"
	shURL = "http://127.0.0.1:9/mcp"
)

// axVerifier reads the key set from the API (as uma: any authenticated
// caller may) and verifies tokens for audience.
func axVerifier(t *testing.T, h *axHarness, audience string) *agentverify.Verifier {
	t.Helper()
	var set jose.JSONWebKeySet
	r := h.do(t, "uma", "GET", jwksPath, "")
	if r.status != 200 {
		t.Fatalf("GET %s = %d %s", jwksPath, r.status, r.body)
	}
	if err := json.Unmarshal(r.body, &set); err != nil {
		t.Fatal(err)
	}
	v, err := agentverify.New(axIssuer, audience, agentverify.StaticKeys(set))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// axTokenSession is axSession with a sub-agent and a second server; USER
// may use every tool but shell.*.
func axTokenSession(t *testing.T, h *axHarness) (session, root, child string) {
	t.Helper()
	_, session, root = axSession(t, h, "auto")
	h.must(t, 201, "adm", "POST", "/api/v2/servers", `{"name":"sh","url":"http://127.0.0.1:9/mcp"}`)
	h.must(t, 201, "adm", "POST", "/api/v2/tools", `{"name":"shell.run","server":"sh"}`)
	h.must(t, 201, "adm", "POST", "/api/v2/tools", `{"name":"fs.delete","server":"fs"}`)
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"allow","tool":"*","scope":"role","value":"USER"}`)
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"deny","tool":"fs.delete","scope":"role","value":"USER"}`)
	child = h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/agents", `{"parent":"`+root+`","tools":["fs.read","shell.run"]}`)["id"].(string)
	return session, root, child
}

func TestMintAgentToken(t *testing.T) {
	h := axNew(t)
	session, root, child := axTokenSession(t, h)
	tests := []struct {
		name, subject, agent, body string
		tools                      []string
	}{
		// fs.delete is denied by policy, so it is never in reach.
		{"owner, root agent, every tool within reach", "uma", root, `{"audience":"fs"}`, []string{"fs.read", "fs.write"}},
		{"by URL, a subset", "uma", root, `{"audience":"http://127.0.0.1:7/mcp","tools":["FS.Read"]}`, []string{"fs.read"}},
		{"sub-agent: its limits narrow", "uma", child, `{"audience":"fs","ttl":"1m"}`, []string{"fs.read"}},
		{"sub-agent on another server", "uma", child, `{"audience":"sh","ttl":"1m"}`, []string{"shell.run"}},
	}
	for _, tt := range tests {
		out := h.must(t, 200, tt.subject, "POST", "/api/v2/sessions/"+session+"/agents/"+tt.agent+"/token", tt.body)
		if out["token_type"] != "Bearer" || out["issued_token_type"] != tokenTypeAccess || out["expires_in"].(float64) <= 0 ||
			out["scope"] != strings.Join(tt.tools, " ") {
			t.Errorf("%s: answer %v", tt.name, out)
			continue
		}
		aud := fsURL
		if strings.Contains(tt.body, `"sh"`) {
			aud = shURL
		}
		tok, err := axVerifier(t, h, aud).Verify(context.Background(), out["access_token"].(string))
		if err != nil {
			t.Errorf("%s: verify: %v", tt.name, err)
			continue
		}
		if tok.User != "uma" || tok.Session != session || tok.Mode != "auto" || !slices.Equal(tok.Tools, tt.tools) || tok.Agent() != tt.agent {
			t.Errorf("%s: token %+v, want user uma, agent %s, tools %v", tt.name, tok, tt.agent, tt.tools)
		}
		if tt.agent == child && !slices.Equal(tok.Agents, []string{root, child}) {
			t.Errorf("%s: chain %v, want [%s %s]", tt.name, tok.Agents, root, child)
		}
		if tok.Expires.Sub(tok.IssuedAt) > 15*60e9 {
			t.Errorf("%s: lifetime %v over the maximum", tt.name, tok.Expires.Sub(tok.IssuedAt))
		}
	}
	// Each mint is audited with the chain and the audience; no token in it.
	var page struct {
		Records []auditjson.Record `json:"records"`
	}
	h.do(t, "adm", "GET", "/api/v2/audit?limit=500", "").decode(t, &page)
	found := false
	for _, rec := range page.Records {
		if strings.HasSuffix(rec.Path, child+"/token") && rec.Decision == string(domain.AuditAllow) {
			found = strings.Contains(rec.Reason, "uma → "+root+" → "+child) && strings.Contains(rec.Reason, "audience "+fsURL)
		}
		if strings.Contains(rec.Reason, "eyJ") {
			t.Errorf("audit record holds a token: %q", rec.Reason)
		}
	}
	if !found {
		t.Error("no audit record of the sub-agent's mint naming the chain and the audience")
	}
}

func TestMintAgentTokenRefusals(t *testing.T) {
	h := axNew(t)
	session, root, child := axTokenSession(t, h)
	gone := h.must(t, 201, "uma", "POST", "/api/v2/sessions", `{"title":"c"}`)["id"].(string)
	goneAgent := h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+gone+"/agents", "")["id"].(string)
	if r := h.do(t, "uma", "DELETE", "/api/v2/sessions/"+gone, ""); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	path := func(s, a string) string { return "/api/v2/sessions/" + s + "/agents/" + a + "/token" }
	tests := []struct {
		name, subject, path, body string
		status                    int
		code                      string
	}{
		{"unknown audience", "uma", path(session, root), `{"audience":"nowhere"}`, 404, domain.ReasonTokenAudienceUnknown},
		{"no audience", "uma", path(session, root), `{}`, 404, domain.ReasonTokenAudienceUnknown},
		{"tool the policy denies", "uma", path(session, root), `{"audience":"fs","tools":["fs.delete"]}`, 403, domain.ReasonTokenToolOutOfReach},
		{"tool of another server", "uma", path(session, root), `{"audience":"fs","tools":["shell.run"]}`, 403, domain.ReasonTokenToolOutOfReach},
		{"tool the sub-agent lacks", "uma", path(session, child), `{"audience":"fs","tools":["fs.write"]}`, 403, domain.ReasonTokenToolOutOfReach},
		// Policy is evaluated for the caller, as in its tool-call decisions:
		// the rules allow USER, not ADMIN.
		{"nothing in reach", "adm", path(session, root), `{"audience":"fs"}`, 403, domain.ReasonTokenNoTools},
		{"empty tool list", "uma", path(session, root), `{"audience":"fs","tools":[]}`, 400, domain.ReasonTokenNoTools},
		{"ttl over the maximum", "uma", path(session, root), `{"audience":"fs","ttl":"16m"}`, 400, domain.ReasonTokenTTL},
		{"ttl not a duration", "uma", path(session, root), `{"audience":"fs","ttl":"soon"}`, 400, domain.ReasonTokenTTL},
		{"another user's session", "bob", path(session, root), `{"audience":"fs"}`, 404, ""},
		{"AUDITOR mints nothing", "aud", path(session, root), `{"audience":"fs"}`, 403, domain.ReasonRoleLacksPermission},
		{"agent of another session", "uma", path(session, goneAgent), `{"audience":"fs"}`, 404, ""},
		{"deleted session", "uma", path(gone, goneAgent), `{"audience":"fs"}`, 404, ""},
	}
	var page struct {
		Records []auditjson.Record `json:"records"`
	}
	for _, tt := range tests {
		r := h.do(t, tt.subject, "POST", tt.path, tt.body)
		if r.status != tt.status {
			t.Errorf("%s: %d %s, want %d", tt.name, r.status, r.body, tt.status)
			continue
		}
		if tt.code == "" {
			continue
		}
		if e := r.errorOf(t); e.ReasonCode != tt.code {
			t.Errorf("%s: reason code %q, want %q", tt.name, e.ReasonCode, tt.code)
		}
		if !strings.HasPrefix(tt.code, "token_") {
			continue // a role's refusal is audited as before (role AUDITOR lacks …)
		}
		// The refusal is a denial in the audit log, with its reason code.
		h.do(t, "adm", "GET", "/api/v2/audit?limit=1&subject="+tt.subject, "").decode(t, &page)
		if len(page.Records) != 1 || page.Records[0].Decision != string(domain.AuditDeny) || !strings.Contains(page.Records[0].Reason, tt.code) {
			t.Errorf("%s: audit record %+v, want a denial naming %s", tt.name, page.Records, tt.code)
		}
	}
}

// TestKeysPublished: besides the public listener (public_test.go), the key
// set is served on the management listener without a credential and on
// the API port to any authenticated caller; the metadata is not, since a
// copy there would name an issuer other than where it is served.
func TestKeysPublished(t *testing.T) {
	h := axNew(t)
	mgmt := httptest.NewServer(h.srv.ManagementHandler())
	defer mgmt.Close()
	for _, tt := range []struct {
		path   string
		served bool
	}{{jwksPath, true}, {metadataPath, false}} {
		res, err := mgmt.Client().Get(mgmt.URL + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		_ = json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if tt.served && (res.StatusCode != 200 || len(body["keys"].([]any)) != 1) || !tt.served && res.StatusCode != 404 {
			t.Errorf("management %s: %d %v, want served %v", tt.path, res.StatusCode, body, tt.served)
		}
		if r := h.do(t, "", "GET", tt.path, ""); r.status != 401 {
			t.Errorf("API %s without a credential: %d, want 401", tt.path, r.status)
		}
		for _, who := range []string{"uma", "aud", "lea"} {
			if r := h.do(t, who, "GET", tt.path, ""); tt.served && r.status != 200 || !tt.served && r.status != 404 {
				t.Errorf("API %s as %s: %d, want served %v", tt.path, who, r.status, tt.served)
			}
		}
	}
}

// axMint mints a token for agent on server fs as uma.
func axMint(t *testing.T, h *axHarness, session, agent, body string) string {
	t.Helper()
	return h.must(t, 200, "uma", "POST", "/api/v2/sessions/"+session+"/agents/"+agent+"/token", body)["access_token"].(string)
}

// exchange posts a token exchange form; no other credential.
func (h *axHarness) exchange(t *testing.T, subjectToken string, form url.Values) axResponse {
	t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if !form.Has("grant_type") {
		form.Set("grant_type", grantTokenExchange)
	}
	if !form.Has("subject_token_type") {
		form.Set("subject_token_type", tokenTypeJWT)
	}
	form.Set("subject_token", subjectToken)
	res, err := http.Post(h.url+tokenEndpoint, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return axResponse{status: res.StatusCode, body: b}
}

func TestExchangeAgentToken(t *testing.T) {
	h := axNew(t)
	session, root, _ := axTokenSession(t, h)
	parent := axMint(t, h, session, root, `{"audience":"fs","ttl":"10m"}`)
	v := axVerifier(t, h, fsURL)
	pt, err := v.Verify(context.Background(), parent)
	if err != nil {
		t.Fatal(err)
	}
	r := h.exchange(t, parent, url.Values{"audience": {"fs"}, "scope": {"fs.read"}, "ttl": {"2m"}})
	if r.status != 200 {
		t.Fatalf("exchange: %d %s", r.status, r.body)
	}
	var out tokenResponse
	r.decode(t, &out)
	ct, err := v.Verify(context.Background(), out.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	if ct.User != "uma" || len(ct.Agents) != 2 || ct.Agents[0] != root || !slices.Equal(ct.Tools, []string{"fs.read"}) || ct.Mode != pt.Mode ||
		ct.Expires.After(pt.Expires) || out.IssuedTokenType != tokenTypeAccess || out.Scope != "fs.read" {
		t.Errorf("child %+v of parent %+v", ct, pt)
	}
	// The sub-agent exists as the agents API would have made it.
	var agents struct {
		Agents []agentJSON `json:"agents"`
	}
	h.do(t, "uma", "GET", "/api/v2/sessions/"+session+"/agents", "").decode(t, &agents)
	if !slices.ContainsFunc(agents.Agents, func(a agentJSON) bool {
		return a.ID == ct.Agent() && a.Parent == root && a.Depth == 1 && slices.Equal(a.Tools, []string{"fs.read"})
	}) {
		t.Errorf("no sub-agent %s of %s with [fs.read] among %+v", ct.Agent(), root, agents.Agents)
	}

	other := newTestSigner(t, "https://elsewhere.test")
	otherTok, err := other.Sign(domain.AgentGrant{ID: "x", Subject: "uma", Chain: []string{root}, Audience: "fs", Session: session,
		Mode: domain.ModeAuto, Tools: []string{"fs.read"}, IssuedAt: time.Now(), Expires: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name            string
		token           string
		form            url.Values
		oauthCode, code string
	}{
		{"a tool the parent lacks", out.AccessToken, url.Values{"scope": {"fs.write"}}, oauthInvalidScope, domain.ReasonTokenWider},
		{"another audience", parent, url.Values{"audience": {"sh"}}, oauthInvalidTarget, domain.ReasonTokenTarget},
		{"longer than the parent", out.AccessToken, url.Values{"ttl": {"5m"}}, oauthInvalidRequest, domain.ReasonTokenTTL},
		{"another issuer's token", otherTok, nil, oauthInvalidGrant, agentverify.ReasonUnknownKey},
		{"not a token", "abc", nil, oauthInvalidGrant, agentverify.ReasonMalformed},
		{"another grant type", parent, url.Values{"grant_type": {"client_credentials"}}, oauthUnsupportedGrantType, domain.ReasonTokenGrantType},
		{"another subject token type", parent, url.Values{"subject_token_type": {"urn:ietf:params:oauth:token-type:id_token"}}, oauthInvalidRequest, ""},
	}
	var page struct {
		Records []auditjson.Record `json:"records"`
	}
	for _, tt := range tests {
		r := h.exchange(t, tt.token, tt.form)
		if e := r.errorOf(t); r.status != 400 || e.Code != tt.oauthCode || e.ReasonCode != tt.code {
			t.Errorf("%s: %d %s, want 400 %s (%s)", tt.name, r.status, r.body, tt.oauthCode, tt.code)
		}
		h.do(t, "adm", "GET", "/api/v2/audit?limit=1", "").decode(t, &page) // newest first: the exchange
		if len(page.Records) != 1 || page.Records[0].Path != tokenEndpoint || page.Records[0].Decision != string(domain.AuditDeny) ||
			!strings.Contains(page.Records[0].Reason, tt.oauthCode+": "+tt.code) {
			t.Errorf("%s: audit records %+v, want a denial naming %s: %s", tt.name, page.Records, tt.oauthCode, tt.code)
		}
	}
	// A deny rule made after the parent was minted holds for the child.
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"deny","tool":"fs.write","scope":"subject","value":"uma"}`)
	for _, form := range []url.Values{{"scope": {"fs.write"}}, nil} {
		if r := h.exchange(t, parent, form); r.status != 400 || r.errorOf(t).ReasonCode != domain.ReasonPolicyDeny {
			t.Errorf("exchange %v after a deny rule: %d %s, want 400 %s", form, r.status, r.body, domain.ReasonPolicyDeny)
		}
	}
	if r := h.exchange(t, parent, url.Values{"scope": {"fs.read"}}); r.status != 200 {
		t.Errorf("exchange of a tool still allowed: %d %s", r.status, r.body)
	}
	// Deleting the session revokes the chain: no more exchanges.
	h.must(t, 204, "uma", "DELETE", "/api/v2/sessions/"+session, "")
	if r := h.exchange(t, parent, nil); r.status != 400 || r.errorOf(t).Code != oauthInvalidGrant || r.errorOf(t).ReasonCode != domain.ReasonTokenRevoked {
		t.Errorf("after the session's deletion: %d %s, want 400 invalid_grant %s", r.status, r.body, domain.ReasonTokenRevoked)
	}
}

// TestExchangeChainsNeverWiden: a random chain of exchanges, each asking
// for a random set of tools (some the parent lacks) and lifetime, never
// yields a token wider than its parent, and stops at the depth cap.
func TestExchangeChainsNeverWiden(t *testing.T) {
	h := axNew(t)
	session, root, _ := axTokenSession(t, h)
	v := axVerifier(t, h, fsURL)
	rng := rand.New(rand.NewPCG(13, 1))
	every := []string{"fs.read", "fs.write", "fs.delete", "shell.run"}
	tok := axMint(t, h, session, root, `{"audience":"fs"}`)
	parent, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	// Bounded: a refusal that repeats for ever (an expired parent, a rate
	// limit) fails the test instead of hanging it.
	for depth, attempt := 1, 0; ; attempt++ {
		if attempt == 2000 {
			t.Fatalf("no answer at depth %d after %d exchanges", depth, attempt)
		}
		form := url.Values{}
		var asked []string
		if rng.IntN(3) > 0 {
			for _, tool := range every {
				if rng.IntN(2) == 0 {
					asked = append(asked, tool)
				}
			}
			form.Set("scope", strings.Join(asked, " "))
		}
		if rng.IntN(2) == 0 {
			// At least a minute, so that no link of the chain expires while a
			// loaded machine runs the test (the child never outlives its parent).
			form.Set("ttl", fmt.Sprintf("%ds", 60+rng.IntN(1140)))
		}
		r := h.exchange(t, tok, form)
		if r.status != 200 {
			code := r.errorOf(t).ReasonCode
			if code == "" {
				t.Fatalf("depth %d, %v: %d %s without a reason code", depth, form, r.status, r.body)
			}
			if code == domain.ReasonTokenDepth {
				if depth <= domain.MaxAgentDepth {
					t.Fatalf("refused at depth %d, below the cap %d", depth, domain.MaxAgentDepth)
				}
				return
			}
			if r.status == 401 || r.status == 429 || code == domain.ReasonTokenExpired {
				t.Fatalf("depth %d: %d %s: the chain itself was refused", depth, r.status, code)
			}
			continue // refused as wider (or empty): ask again
		}
		if depth > domain.MaxAgentDepth {
			t.Fatalf("an exchange at depth %d passed the cap", depth)
		}
		var out tokenResponse
		r.decode(t, &out)
		child, err := v.Verify(context.Background(), out.AccessToken)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range child.Tools {
			if !parent.Permits(tool) {
				t.Fatalf("depth %d: child tool %s not in parent %v", depth, tool, parent.Tools)
			}
		}
		if child.Expires.After(parent.Expires) || child.Mode != parent.Mode || child.User != parent.User || child.Session != parent.Session ||
			!slices.Equal(child.Agents[:len(parent.Agents)], parent.Agents) || len(child.Agents) != len(parent.Agents)+1 {
			t.Fatalf("depth %d: child %+v wider than or unrelated to parent %+v", depth, child, parent)
		}
		for _, a := range asked {
			if !parent.Permits(a) {
				t.Fatalf("depth %d: asked %v beyond the parent %v and was given %v", depth, asked, parent.Tools, child.Tools)
			}
		}
		tok, parent = out.AccessToken, child
		depth++
	}
}

// newTestSigner is another issuer's signer, with its own key.
func newTestSigner(t *testing.T, issuer string) *agenttoken.Signer {
	t.Helper()
	sg, err := agenttoken.New(agenttoken.Settings{Issuer: issuer, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return sg
}

// doToken sends a request with an agent token as the Bearer credential.
func (h *axHarness) doToken(t *testing.T, token, method, path, body string) axResponse {
	t.Helper()
	req, err := http.NewRequest(method, h.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return axResponse{status: res.StatusCode, body: b}
}

func (h *axHarness) introspect(t *testing.T, subject, token string) map[string]any {
	t.Helper()
	r, _ := h.post(t, subject, introspectionEndpoint, formType, url.Values{"token": {token}}.Encode())
	if r.status != 200 {
		t.Fatalf("introspection as %s: %d %s", subject, r.status, r.body)
	}
	out := map[string]any{}
	r.decode(t, &out)
	return out
}

// TestAgentTokenAsksAndRevokes: an agent token asks for live decisions on
// its session's tool-calls endpoint and opens nothing else; introspection
// and decisions follow policy changes and the session's deletion at once.
func TestAgentTokenAsksAndRevokes(t *testing.T) {
	h := axNew(t)
	session, root, child := axTokenSession(t, h)
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"ask","tool":"fs.write","scope":"role","value":"USER"}`)
	tok := axMint(t, h, session, root, `{"audience":"fs"}`)
	calls := "/api/v2/sessions/" + session + "/tool-calls"
	decisions := []struct {
		name, body       string
		status           int
		decision, reason string
	}{
		{"granted tool", `{"tool":"fs.read"}`, 201, "allow", domain.ReasonTokenPolicyAllow},
		{"the token's agent named", `{"agent":"` + root + `","tool":"fs.read"}`, 201, "allow", domain.ReasonTokenPolicyAllow},
		{"policy asks", `{"tool":"fs.write"}`, 201, "ask", domain.ReasonPolicyAsk},
		{"tool not in the token", `{"tool":"shell.run"}`, 201, "deny", domain.ReasonTokenToolNotGranted},
		{"another agent", `{"agent":"` + child + `","tool":"fs.read"}`, 403, "", domain.ReasonTokenOtherSession},
	}
	for _, tt := range decisions {
		r := h.doToken(t, tok, "POST", calls, tt.body)
		if r.status != tt.status {
			t.Errorf("%s: %d %s", tt.name, r.status, r.body)
			continue
		}
		if tt.status != 201 {
			if e := r.errorOf(t); e.ReasonCode != tt.reason {
				t.Errorf("%s: %+v, want %s", tt.name, e, tt.reason)
			}
			continue
		}
		var tc toolCallJSON
		r.decode(t, &tc)
		if tc.Decision != tt.decision || tc.Reason != tt.reason || tc.RequestedBy != "agent:"+root {
			t.Errorf("%s: %+v, want %s/%s", tt.name, tc, tt.decision, tt.reason)
		}
	}
	// Nowhere else: the token authenticates that one endpoint.
	for _, ep := range []struct{ method, path, body string }{
		{"GET", "/api/v2/me", ""},
		{"GET", "/api/v2/sessions", ""},
		{"GET", calls, ""},
		{"POST", "/api/v2/sessions/" + session + "/agents", `{}`},
		{"POST", "/api/v2/sessions/" + session + "/agents/" + root + "/token", `{"audience":"fs"}`},
		{"POST", introspectionEndpoint, `token=x`},
		{"GET", jwksPath, ""},
	} {
		r := h.doToken(t, tok, ep.method, ep.path, ep.body)
		if r.status != 403 || r.errorOf(t).ReasonCode != domain.ReasonAgentTokenRoute {
			t.Errorf("%s %s with an agent token: %d %s, want 403 %s", ep.method, ep.path, r.status, r.body, domain.ReasonAgentTokenRoute)
		}
	}
	// Who introspects: holders of tokens:introspect (ADMIN by default, a
	// tool server's role), not the session's user.
	if r, _ := h.post(t, "uma", introspectionEndpoint, formType, "token="+tok); r.status != 403 {
		t.Errorf("introspection as uma: %d %s, want 403", r.status, r.body)
	}
	if in := h.introspect(t, "adm", tok); in["active"] != true || in["sub"] != "uma" || in["aud"] != fsURL || in["session_id"] != session {
		t.Errorf("introspect: %v", in)
	}
	if in := h.introspect(t, "adm", "not-a-token"); len(in) != 1 || in["active"] != false {
		t.Errorf("introspect garbage: %v", in)
	}
	// A deny rule for the owner takes effect at once: decisions deny, the
	// tool leaves the introspected set; with every tool denied the token
	// is inactive.
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"deny","tool":"fs.read","scope":"subject","value":"uma"}`)
	r := h.doToken(t, tok, "POST", calls, `{"tool":"fs.read"}`)
	var tc toolCallJSON
	r.decode(t, &tc)
	if tc.Decision != "deny" || tc.Reason != domain.ReasonPolicyDeny {
		t.Errorf("after the deny rule: %+v", tc)
	}
	if in := h.introspect(t, "adm", tok); in["active"] != true || fmt.Sprint(in["tools"]) != "[fs.write]" {
		t.Errorf("introspect after the deny rule: %v", in)
	}
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"deny","tool":"fs.*","scope":"subject","value":"uma"}`)
	if in := h.introspect(t, "adm", tok); in["active"] != false {
		t.Errorf("introspect with every tool denied: %v", in)
	}
	// Deleting the session ends the token: inactive, and refused as a
	// credential.
	h.must(t, 204, "uma", "DELETE", "/api/v2/sessions/"+session, "")
	if in := h.introspect(t, "adm", tok); in["active"] != false {
		t.Errorf("introspect after deletion: %v", in)
	}
	if r := h.doToken(t, tok, "POST", calls, `{"tool":"fs.read"}`); r.status != 401 || r.errorOf(t).ReasonCode != domain.ReasonTokenRevoked {
		t.Errorf("replayed after revocation: %d %s, want 401 %s", r.status, r.body, domain.ReasonTokenRevoked)
	}
	// Every use is audited with the chain and the audience.
	var page struct {
		Records []auditjson.Record `json:"records"`
	}
	h.do(t, "adm", "GET", "/api/v2/audit?limit=500", "").decode(t, &page)
	uses, introspections := 0, 0
	for _, rec := range page.Records {
		if rec.AuthMethod == domain.MethodAgentToken && strings.Contains(rec.Reason, "uma → "+root) && strings.Contains(rec.Reason, "audience "+fsURL) {
			uses++
		}
		if rec.Path == introspectionEndpoint && strings.Contains(rec.Reason, "token introspected") {
			introspections++
		}
	}
	if uses < len(decisions)+8 || introspections < 5 {
		t.Errorf("%d token uses and %d introspections audited with the chain", uses, introspections)
	}
}

// TestAgentTokenFollowsRoleRules: a role rule made after minting binds the
// token's next decision, which names the rule; removing it lifts it.
func TestAgentTokenFollowsRoleRules(t *testing.T) {
	h := axNew(t)
	session, root, _ := axTokenSession(t, h)
	tok := axMint(t, h, session, root, `{"audience":"fs"}`)
	calls := "/api/v2/sessions/" + session + "/tool-calls"
	decide := func(step, effect, reason, rule string) {
		t.Helper()
		var tc toolCallJSON
		h.doToken(t, tok, "POST", calls, `{"tool":"fs.read"}`).decode(t, &tc)
		if tc.Decision != effect || tc.Reason != reason || tc.Rule != rule || rule != "" && !strings.Contains(tc.Message, rule) {
			t.Errorf("%s: %+v, want %s %s naming rule %q", step, tc, effect, reason, rule)
		}
	}
	var allow []policyJSON
	var list struct{ Policies []policyJSON }
	h.do(t, "adm", "GET", "/api/v2/policies", "").decode(t, &list)
	for _, p := range list.Policies {
		if p.Effect == "allow" {
			allow = append(allow, p)
		}
	}
	decide("minted", "allow", domain.ReasonTokenPolicyAllow, allow[0].ID)
	deny := h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"deny","tool":"fs.read","scope":"role","value":"USER"}`)["id"].(string)
	decide("a role deny made after minting", "deny", domain.ReasonPolicyDeny, deny)
	if in := h.introspect(t, "adm", tok); fmt.Sprint(in["tools"]) != "[fs.write]" {
		t.Errorf("introspect after the role deny: %v", in)
	}
	h.must(t, 204, "adm", "DELETE", "/api/v2/policies/"+deny, "")
	decide("the deny removed", "allow", domain.ReasonTokenPolicyAllow, allow[0].ID)
	ask := h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"ask","tool":"fs.read","scope":"role","value":"USER"}`)["id"].(string)
	decide("a role ask made after minting", "ask", domain.ReasonPolicyAsk, ask)
}

// demotable is the test's identity provider: uma's roles are what the
// test last set (a person demoted in its provider), every other caller's
// the keys'.
type demotable struct {
	ports.Authenticator
	uma atomic.Pointer[[]domain.Role]
}

func (d *demotable) Authenticate(ctx context.Context, cred ports.Credential) (domain.Principal, error) {
	p, err := d.Authenticator.Authenticate(ctx, cred)
	if r := d.uma.Load(); err == nil && p.Subject == "uma" && r != nil {
		p.Roles = *r
	}
	return p, err
}

// TestDemotedOwnerNarrowsAgentTokens: the owner of a session, demoted by
// its identity provider, narrows its agents' tokens from its next request
// on (when agentauth learns of it), as it narrows its managed keys.
func TestDemotedOwnerNarrowsAgentTokens(t *testing.T) {
	idp := &demotable{}
	h := axStart(t, filepath.Join(t.TempDir(), "agentauth.db"), axOptions{authn: func(keys ports.Authenticator) ports.Authenticator {
		idp.Authenticator = keys
		return idp
	}})
	session, root, _ := axTokenSession(t, h)
	tok := axMint(t, h, session, root, `{"audience":"fs"}`)
	calls := "/api/v2/sessions/" + session + "/tool-calls"
	decide := func(step, effect, reason string) {
		t.Helper()
		var tc toolCallJSON
		h.doToken(t, tok, "POST", calls, `{"tool":"fs.read"}`).decode(t, &tc)
		if tc.Decision != effect || tc.Reason != reason {
			t.Errorf("%s: %+v, want %s %s", step, tc, effect, reason)
		}
	}
	decide("minted", "allow", domain.ReasonTokenPolicyAllow)
	auditor := []domain.Role{domain.RoleAuditor}
	idp.uma.Store(&auditor)
	decide("demoted, not yet seen", "allow", domain.ReasonTokenPolicyAllow)
	h.must(t, 200, "uma", "GET", "/api/v2/me", "")
	decide("demoted and seen", "deny", domain.ReasonRoleLacksPermission)
	if in := h.introspect(t, "adm", tok); in["active"] != false {
		t.Errorf("introspect after the owner's demotion: %v", in)
	}
	user := []domain.Role{domain.RoleUser}
	idp.uma.Store(&user)
	h.must(t, 200, "uma", "GET", "/api/v2/me", "")
	decide("restored", "allow", domain.ReasonTokenPolicyAllow)
	// An owner suspended by an ADMIN (a person leaving) holds no roles for
	// its agents until restored.
	h.must(t, 204, "adm", "PUT", "/api/v2/key-owners/uma", `{"disabled":true}`)
	decide("suspended", "deny", domain.ReasonTokenOwnerRolesUnknown)
	h.must(t, 204, "adm", "PUT", "/api/v2/key-owners/uma", `{"disabled":false}`)
	decide("no longer suspended", "allow", domain.ReasonTokenPolicyAllow)
}

// TestMintByAnotherManagerIsBoundedByTheOwner: an ADMIN (or a project's
// LEAD) may mint for a session it manages, but the token never carries a
// tool the session's owner may not use, however wide the minter's own rules.
func TestMintByAnotherManagerIsBoundedByTheOwner(t *testing.T) {
	h := axNew(t)
	session, root, _ := axTokenSession(t, h)
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"allow","tool":"*","scope":"role","value":"ADMIN"}`)
	out := h.must(t, 200, "adm", "POST", "/api/v2/sessions/"+session+"/agents/"+root+"/token", `{"audience":"fs"}`)
	tok, err := axVerifier(t, h, fsURL).Verify(context.Background(), out["access_token"].(string))
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if want := []string{"fs.read", "fs.write"}; !slices.Equal(tok.Tools, want) {
		t.Errorf("ADMIN minted tools %v for a USER's session, want %v (fs.delete is denied to the owner)", tok.Tools, want)
	}
	r := h.do(t, "adm", "POST", "/api/v2/sessions/"+session+"/agents/"+root+"/token", `{"audience":"fs","tools":["fs.delete"]}`)
	if r.status != 403 || r.errorOf(t).ReasonCode != domain.ReasonTokenToolOutOfReach {
		t.Errorf("ADMIN asking for fs.delete in a USER's session: %d %s, want 403 %s", r.status, r.body, domain.ReasonTokenToolOutOfReach)
	}
}

// TestServerURLIsAResourceIndicator: a server's URL becomes its tokens'
// audience (RFC 8707), so registration refuses one that cannot be: a
// fragment, user information, another scheme, no host.
func TestServerURLIsAResourceIndicator(t *testing.T) {
	h := axNew(t)
	tests := []struct {
		url    string
		status int
	}{
		{"https://fs.example.com/mcp", 201},
		{"HTTPS://Sh.Example.com:443/", 201},
		{"https://fs.example.com/mcp#tools", 400},
		{"https://user:pw@fs.example.com/mcp", 400},
		{"ftp://fs.example.com/mcp", 400},
		{"https:///mcp", 400},
	}
	for i, tt := range tests {
		if r := h.do(t, "adm", "POST", "/api/v2/servers", fmt.Sprintf(`{"name":"srv-%d","url":%q}`, i, tt.url)); r.status != tt.status {
			t.Errorf("server URL %q: %d %s, want %d", tt.url, r.status, r.body, tt.status)
		}
	}
}

// TestApprovalFollowsRulesInForce: a call that waits is approved against
// the rules in force at the approval, for whoever asked it with its roles
// now: a role rule or a rule about the session's owner made meanwhile
// refuses the approval of its agent's call (409 naming the rule).
func TestApprovalFollowsRulesInForce(t *testing.T) {
	h := axNew(t)
	session, root, _ := axTokenSession(t, h)
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"ask","tool":"fs.write","scope":"role","value":"USER"}`)
	tok := axMint(t, h, session, root, `{"audience":"fs"}`)
	calls := "/api/v2/sessions/" + session + "/tool-calls"
	ask := func() string {
		t.Helper()
		var tc toolCallJSON
		h.doToken(t, tok, "POST", calls, `{"tool":"fs.write","arguments":{"path":"/a"}}`).decode(t, &tc)
		if tc.Status != "pending" {
			t.Fatalf("the call does not wait: %+v", tc)
		}
		return tc.ID
	}
	for _, rule := range []string{
		`{"effect":"deny","tool":"fs.write","scope":"role","value":"USER"}`, // about the owner's role
		`{"effect":"deny","tool":"fs.*","scope":"subject","value":"uma"}`,   // about the owner, not the agent
	} {
		call := ask()
		id := h.must(t, 201, "adm", "POST", "/api/v2/policies", rule)["id"].(string)
		r := h.do(t, "lea", "POST", calls+"/"+call+"/approve", "")
		if r.status != 409 || !strings.Contains(string(r.body), id) {
			t.Errorf("approving %s after rule %s: %d %s, want 409 naming the rule", call, rule, r.status, r.body)
		}
		h.must(t, 204, "adm", "DELETE", "/api/v2/policies/"+id, "")
	}
	call := ask()
	h.must(t, 200, "lea", "POST", calls+"/"+call+"/approve", "")
}
