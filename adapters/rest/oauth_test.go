package rest

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// oauthError is RFC 6749 §5.2's error body, with agentauth's reason code
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
