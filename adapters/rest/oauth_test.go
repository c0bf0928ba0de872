package rest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agentauth/agentauth/adapters/agenttoken"
	"github.com/agentauth/agentauth/adapters/auditsign"
	"github.com/agentauth/agentauth/agentverify"
	"github.com/agentauth/agentauth/domain"
)

// oauthErrorJSON is RFC 6749 §5.2's error body, with agentauth's reason code
// and request id as extension members.
type oauthErrorJSON struct {
	Error       any    `json:"error"`
	Description string `json:"error_description"`
	ReasonCode  string `json:"reason_code"`
	RequestID   string `json:"request_id"`
}

// post sends body with contentType to path, with subject's credential
// ("" for none).
func (h *axHarness) post(t *testing.T, subject, path, contentType, body string) (axResponse, http.Header) {
	t.Helper()
	req, err := http.NewRequest("POST", h.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if subject != "" {
		req.Header.Set("Authorization", "Bearer "+axKey(subject))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return axResponse{status: res.StatusCode, body: b}, res.Header
}

const formType = "application/x-www-form-urlencoded"

// TestOAuthEndpointsAnswerOAuthErrors: /oauth2/token and /oauth2/introspect
// read parameters from a form body only, refuse any in the query and any
// repeated one, and answer errors as RFC 6749 §5.2 has them.
func TestOAuthEndpointsAnswerOAuthErrors(t *testing.T) {
	h := axNew(t)
	session, root, _ := axTokenSession(t, h)
	parent := axMint(t, h, session, root, `{"audience":"fs","ttl":"10m"}`)
	exchange := url.Values{"grant_type": {grantTokenExchange}, "subject_token_type": {tokenTypeAccess}, "subject_token": {parent}}
	with := func(v url.Values, kv ...string) string {
		out := url.Values{}
		for k, vs := range v {
			out[k] = append([]string(nil), vs...)
		}
		for i := 0; i < len(kv); i += 2 {
			out.Add(kv[i], kv[i+1])
		}
		return out.Encode()
	}
	tests := []struct {
		name, subject, path, contentType, body string
		status                                 int
		code                                   string
	}{
		{"token: parameters in the query", "", tokenEndpoint + "?" + exchange.Encode(), formType, "", 400, "invalid_request"},
		{"token: one parameter in the query", "", tokenEndpoint + "?scope=fs.read", formType, exchange.Encode(), 400, "invalid_request"},
		{"token: a repeated subject_token", "", tokenEndpoint, formType, with(exchange, "subject_token", "other"), 400, "invalid_request"},
		{"token: a JSON body", "", tokenEndpoint, "application/json", `{"grant_type":"` + grantTokenExchange + `"}`, 400, "invalid_request"},
		{"token: another grant type", "", tokenEndpoint, formType, with(url.Values{"grant_type": {"client_credentials"}}), 400, "unsupported_grant_type"},
		{"token: no subject token", "", tokenEndpoint, formType, with(url.Values{"grant_type": {grantTokenExchange}, "subject_token_type": {tokenTypeAccess}}), 400, "invalid_request"},
		{"token: not a token", "", tokenEndpoint, formType, with(url.Values{"grant_type": {grantTokenExchange}, "subject_token_type": {tokenTypeAccess}, "subject_token": {"abc"}}), 400, "invalid_grant"},
		{"token: another audience", "", tokenEndpoint, formType, with(exchange, "audience", "sh"), 400, "invalid_target"},
		{"token: an unknown resource", "", tokenEndpoint, formType, with(exchange, "resource", "https://nowhere.test/mcp"), 400, "invalid_target"},
		{"token: a wider scope", "", tokenEndpoint, formType, with(exchange, "scope", "shell.run"), 400, "invalid_scope"},
		{"token: an id token asked for", "", tokenEndpoint, formType, with(exchange, "requested_token_type", "urn:ietf:params:oauth:token-type:id_token"), 400, "invalid_request"},
		{"token: an actor token", "", tokenEndpoint, formType, with(exchange, "actor_token", parent, "actor_token_type", tokenTypeAccess), 400, "invalid_request"},
		{"introspect: the token in the query", "adm", introspectionEndpoint + "?token=" + parent, formType, "", 400, "invalid_request"},
		{"introspect: a JSON body", "adm", introspectionEndpoint, "application/json", `{"token":"` + parent + `"}`, 400, "invalid_request"},
		{"introspect: a repeated token", "adm", introspectionEndpoint, formType, "token=" + parent + "&token=" + parent, 400, "invalid_request"},
		{"introspect: no token", "adm", introspectionEndpoint, formType, "token_type_hint=access_token", 400, "invalid_request"},
		{"introspect: no credential", "", introspectionEndpoint, formType, "token=" + parent, 401, "invalid_client"},
		{"introspect: a role without tokens:introspect", "uma", introspectionEndpoint, formType, "token=" + parent, 403, "unauthorized_client"},
	}
	for _, tt := range tests {
		r, hdr := h.post(t, tt.subject, tt.path, tt.contentType, tt.body)
		var e oauthErrorJSON
		r.decode(t, &e)
		if r.status != tt.status || e.Error != tt.code || e.Description == "" || e.RequestID == "" {
			t.Errorf("%s: %d %s, want %d with error %q, a description and the request id", tt.name, r.status, r.body, tt.status, tt.code)
		}
		if strings.ContainsAny(e.Description, "\"\\") {
			t.Errorf("%s: error_description %q has characters RFC 6749 §5.2 forbids", tt.name, e.Description)
		}
		if tt.status == 401 && !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: WWW-Authenticate %q, want Bearer", tt.name, hdr.Get("WWW-Authenticate"))
		}
		// A challenge on another status makes clients (oauth4webapi) take
		// the answer for an authentication challenge, not an OAuth error.
		if tt.status != 401 && hdr.Get("WWW-Authenticate") != "" {
			t.Errorf("%s: %d with WWW-Authenticate %q, want none", tt.name, r.status, hdr.Get("WWW-Authenticate"))
		}
	}
	// Nothing above made a sub-agent: a refused exchange creates none.
	var agents struct {
		Agents []agentJSON `json:"agents"`
	}
	h.do(t, "uma", "GET", "/api/v2/sessions/"+session+"/agents", "").decode(t, &agents)
	if len(agents.Agents) != 2 {
		t.Errorf("%d agents after refused exchanges, want the 2 made by the test", len(agents.Agents))
	}
}

// TestExchangeResourceAndTokenType: resource (RFC 8707) names the
// audience by its URL, audience by name or URL; requested_token_type is
// honoured; the answer always carries scope and issued_token_type.
func TestExchangeResourceAndTokenType(t *testing.T) {
	h := axNew(t)
	session, root, _ := axTokenSession(t, h)
	parent := axMint(t, h, session, root, `{"audience":"http://127.0.0.1:7/mcp","ttl":"10m"}`)
	tests := []struct {
		name              string
		form              url.Values
		wantScope, wantTT string
	}{
		{"resource", url.Values{"resource": {"http://127.0.0.1:7/mcp"}, "scope": {"fs.read"}}, "fs.read", tokenTypeAccess},
		{"audience by URL", url.Values{"audience": {"http://127.0.0.1:7/mcp"}}, "fs.read fs.write", tokenTypeAccess},
		{"audience by name and resource", url.Values{"audience": {"fs"}, "resource": {"http://127.0.0.1:7/mcp"}}, "fs.read fs.write", tokenTypeAccess},
		{"a JWT asked for", url.Values{"requested_token_type": {tokenTypeJWT}, "scope": {"fs.write fs.read"}}, "fs.read fs.write", tokenTypeJWT},
		{"an access token asked for", url.Values{"requested_token_type": {tokenTypeAccess}}, "fs.read fs.write", tokenTypeAccess},
	}
	for _, tt := range tests {
		r := h.exchange(t, parent, tt.form)
		var out map[string]any
		r.decode(t, &out)
		if r.status != 200 || out["scope"] != tt.wantScope || out["issued_token_type"] != tt.wantTT || out["token_type"] != "Bearer" {
			t.Errorf("%s: %d %s, want scope %q and issued_token_type %s", tt.name, r.status, r.body, tt.wantScope, tt.wantTT)
		}
	}
}

// TestMetadataAdvertisesWhatIsSupported: the RFC 8414 document names
// what the endpoints do, and nothing they do not.
func TestMetadataAdvertisesWhatIsSupported(t *testing.T) {
	h := axNew(t)
	got := h.srv.metadata()
	want := map[string]any{
		"issuer":                                axIssuer,
		"jwks_uri":                              axIssuer + jwksPath,
		"token_endpoint":                        axIssuer + tokenEndpoint,
		"introspection_endpoint":                axIssuer + introspectionEndpoint,
		"grant_types_supported":                 []string{grantTokenExchange},
		"token_endpoint_auth_methods_supported": []string{"none"},
		"introspection_endpoint_auth_methods_supported": []string{"bearer"},
		"response_types_supported":                      []string{},
	}
	if len(got) != len(want) {
		t.Errorf("metadata has %d members %v, want %d %v", len(got), got, len(want), want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || fmt.Sprint(g) != fmt.Sprint(v) {
			t.Errorf("metadata %s = %v, want %v", k, g, v)
		}
	}
}

// TestOAuthRateLimit: each endpoint takes at most the configured number of
// requests per minute from one caller (the token endpoint: one client
// address; introspection: one authenticated subject), then answers 429
// until the minute ends.
func TestOAuthRateLimit(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := axStart(t, filepath.Join(t.TempDir(), "agentauth.db"), axOptions{rate: 3, now: func() time.Time { return now }})
	session, root, _ := axTokenSession(t, h)
	parent := axMint(t, h, session, root, `{"audience":"fs","ttl":"10m"}`)
	for i := range 4 {
		want := 200
		if i == 3 {
			want = 429
		}
		if r := h.exchange(t, parent, url.Values{"scope": {"fs.read"}}); r.status != want {
			t.Errorf("exchange %d: %d %s, want %d", i+1, r.status, r.body, want)
		}
		if r, _ := h.post(t, "adm", introspectionEndpoint, formType, "token="+parent); r.status != want {
			t.Errorf("introspection %d as adm: %d %s, want %d", i+1, r.status, r.body, want)
		}
	}
	var e oauthErrorJSON
	r, hdr := h.post(t, "adm", introspectionEndpoint, formType, "token="+parent)
	r.decode(t, &e)
	if e.Error != "temporarily_unavailable" || hdr.Get("Retry-After") == "" {
		t.Errorf("over the limit: %s, Retry-After %q; want temporarily_unavailable and Retry-After", r.body, hdr.Get("Retry-After"))
	}
	// Another caller has its own budget; the next minute a new one.
	if r, _ := h.post(t, "sec", introspectionEndpoint, formType, "token="+parent); r.status == 429 {
		t.Errorf("another subject's introspection: 429, want its own budget")
	}
	now = now.Add(time.Minute)
	if r := h.exchange(t, parent, url.Values{"scope": {"fs.read"}}); r.status != 200 {
		t.Errorf("exchange the next minute: %d %s, want 200", r.status, r.body)
	}
}

// TestSubAgentBound: the exchanges of one session create at most the
// configured number of sub-agents.
func TestSubAgentBound(t *testing.T) {
	h := axStart(t, filepath.Join(t.TempDir(), "agentauth.db"), axOptions{maxSubAgents: 3})
	session, root, _ := axTokenSession(t, h) // one sub-agent made through the API
	parent := axMint(t, h, session, root, `{"audience":"fs","ttl":"10m"}`)
	for i := range 3 {
		want := 200
		if i == 2 {
			want = 400
		}
		r := h.exchange(t, parent, nil)
		var e oauthErrorJSON
		if r.status == 400 {
			r.decode(t, &e)
		}
		if r.status != want || (want == 400 && (e.Error != "invalid_grant" || e.ReasonCode != domain.ReasonTokenSubAgents)) {
			t.Errorf("exchange %d: %d %s, want %d (then invalid_grant, %s)", i+1, r.status, r.body, want, domain.ReasonTokenSubAgents)
		}
	}
}

// TestAgentTokensAreRFC9068: a minted token carries typ at+jwt, client_id
// (the acting agent), scope (its tools) and aud (the server's canonical
// resource URL, whether the audience was named by name or URL);
// introspection answers the same; a token signed with the agent-token key
// but another typ is refused everywhere a token is accepted.
func TestAgentTokensAreRFC9068(t *testing.T) {
	dir := t.TempDir()
	h := axStart(t, filepath.Join(dir, "agentauth.db"))
	session, root, _ := axTokenSession(t, h)
	const resource = "http://127.0.0.1:7/mcp"
	for _, audience := range []string{"fs", "HTTP://127.0.0.1:7/mcp", resource} {
		tok := axMint(t, h, session, root, `{"audience":"`+audience+`","tools":["fs.read"]}`)
		jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.EdDSA})
		if err != nil {
			t.Fatal(err)
		}
		var claims map[string]any
		if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &claims); err != nil {
			t.Fatal(err)
		}
		if typ := jws.Signatures[0].Header.ExtraHeaders[jose.HeaderType]; typ != "at+jwt" || claims["client_id"] != root || claims["scope"] != "fs.read" ||
			claims["aud"] != resource {
			t.Errorf("audience %s: typ %v, claims %v; want at+jwt, client_id %s, scope fs.read, aud %s", audience, typ, claims, root, resource)
		}
		in := h.introspect(t, "adm", tok)
		if in["client_id"] != root || in["scope"] != "fs.read" || in["aud"] != resource || in["token_type"] != "Bearer" {
			t.Errorf("introspection %v: want client_id, scope and aud", in)
		}
	}
	// The agent-token key itself signs a JWT of another type.
	seed, err := os.ReadFile(agenttoken.DefaultKeyPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	key, err := auditsign.ParseSeed(string(seed))
	if err != nil {
		t.Fatal(err)
	}
	kid := h.srv.cfg.AgentTokens.Keys.JWKS().Keys[0].KeyID
	now := time.Now()
	claims := agentverify.Claims{Claims: jwt.Claims{Issuer: axIssuer, Subject: "uma", Audience: jwt.Audience{resource}, ID: "tok_forged",
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Minute))},
		ClientID: root, Scope: "fs.read fs.write", Act: agentverify.ActorChain([]string{root}), Session: session, Mode: "auto"}
	for _, typ := range []string{"JWT", ""} {
		opts := &jose.SignerOptions{}
		if typ != "" {
			opts = opts.WithType(jose.ContentType(typ))
		}
		sg, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		forged, err := jwt.Signed(sg).Claims(claims).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		if r := h.doToken(t, forged, "POST", "/api/v2/sessions/"+session+"/tool-calls", `{"tool":"fs.read"}`); r.status != 401 ||
			r.errorOf(t).ReasonCode != agentverify.ReasonType {
			t.Errorf("typ %q at the tool-calls endpoint: %d %s, want 401 %s", typ, r.status, r.body, agentverify.ReasonType)
		}
		if in := h.introspect(t, "adm", forged); in["active"] != false {
			t.Errorf("typ %q introspected: %v, want inactive", typ, in)
		}
		if r := h.exchange(t, forged, nil); r.status != 400 || r.errorOf(t).ReasonCode != agentverify.ReasonType {
			t.Errorf("typ %q exchanged: %d %s, want 400 invalid_grant %s", typ, r.status, r.body, agentverify.ReasonType)
		}
	}
}
