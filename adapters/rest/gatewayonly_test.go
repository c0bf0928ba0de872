package rest

import (
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/adapters/auditjson"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// TestResourceOnlyTokenOpensItsGatewayOnly: a provider token whose
// audience names only the gateway resource of fs (RFC 8707) opens
// /mcp/fs and nothing else: every API route, the console, another
// server's endpoint and near-miss paths answer 403
// token_audience_gateway_only, each audited as a denial before the
// answer; a token issued to the client opens the API as before.
func TestResourceOnlyTokenOpensItsGatewayOnly(t *testing.T) {
	u := newGWUpstream(t)
	h := gwStart(t, axOptions{authn: func(keys ports.Authenticator) ports.Authenticator { return gwIdP{keys} }}, 10*time.Second)
	session, agent, _ := gwWorld(t, h, u)
	named := map[string]string{HeaderGatewaySession: session, HeaderGatewayAgent: agent}

	tests := []struct {
		name, token, method, path, body string
		status                          int
		reason                          string
	}{
		{"resource-only: its gateway endpoint", "idp-token-fs-only", "POST", "/mcp/fs", gwInitialize, 200, ""},
		{"resource-only: /api/v2/me", "idp-token-fs-only", "GET", "/api/v2/me", "", 403, domain.ReasonTokenGatewayOnly},
		{"resource-only: its session", "idp-token-fs-only", "GET", "/api/v2/sessions/" + session, "", 403, domain.ReasonTokenGatewayOnly},
		{"resource-only: a tool call through the API", "idp-token-fs-only", "POST", "/api/v2/sessions/" + session + "/tool-calls",
			`{"agent":"` + agent + `","tool":"fs.read"}`, 403, domain.ReasonTokenGatewayOnly},
		{"resource-only: the console", "idp-token-fs-only", "GET", "/console/", "", 403, domain.ReasonTokenGatewayOnly},
		{"resource-only: another server", "idp-token-fs-only", "POST", "/mcp/other", gwInitialize, 403, domain.ReasonTokenGatewayOnly},
		{"resource-only: an unknown server", "idp-token-fs-only", "POST", "/mcp/nosuch", gwInitialize, 403, domain.ReasonTokenGatewayOnly},
		{"resource-only: a trailing slash", "idp-token-fs-only", "POST", "/mcp/fs/", gwInitialize, 403, domain.ReasonTokenGatewayOnly},
		{"resource-only: the path in upper case", "idp-token-fs-only", "POST", "/MCP/fs", gwInitialize, 403, domain.ReasonTokenGatewayOnly},
		{"resource-only: an unknown route", "idp-token-fs-only", "GET", "/api/v2/nothing-here", "", 403, domain.ReasonTokenGatewayOnly},
		{"another resource only: fs", "idp-token-for-other", "POST", "/mcp/fs", gwInitialize, 403, domain.ReasonTokenGatewayOnly},
		{"client and resource: /api/v2/me", "idp-token-for-resource", "GET", "/api/v2/me", "", 200, ""},
		{"client only: /api/v2/me", "idp-token-for-client", "GET", "/api/v2/me", "", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, h.url+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+tt.token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range named {
				req.Header.Set(k, v)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var e errorBody
			page := strings.HasPrefix(tt.path, "/console") // an HTML page: the reason code is checked in the audit record
			if !page {
				_ = json.NewDecoder(res.Body).Decode(&e)
			}
			if res.StatusCode != tt.status || !page && e.Error.ReasonCode != tt.reason {
				t.Fatalf("%s %s = %d %q, want %d %q", tt.method, tt.path, res.StatusCode, e.Error.ReasonCode, tt.status, tt.reason)
			}
			if tt.reason == "" {
				return
			}
			if id := res.Header.Get(HeaderRequestID); e.RequestID != id && e.RequestID != "" || id == "" {
				t.Errorf("request id %q in the body, %q in the header", e.RequestID, id)
			}
			var audit struct {
				Records []auditjson.Record `json:"records"`
			}
			h.do(t, "adm", "GET", "/api/v2/audit?limit=1000", "").decode(t, &audit)
			var rec *auditjson.Record
			for i := range audit.Records {
				if audit.Records[i].RequestID == res.Header.Get(HeaderRequestID) {
					rec = &audit.Records[i]
				}
			}
			if rec == nil || rec.Decision != string(domain.AuditDeny) || rec.Status != 403 || rec.Subject != "uma" ||
				!strings.Contains(rec.Reason, domain.ReasonTokenGatewayOnly) {
				t.Errorf("audit record %+v: want uma denied with %s", rec, domain.ReasonTokenGatewayOnly)
			}
		})
	}
}

// TestResourceOnlyTokenOnThePublicListener: the public listener's
// authenticated endpoint (introspection) refuses a resource-only token
// too, as does every route when no gateway is served.
func TestResourceOnlyTokenOnThePublicListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	h := axStart(t, filepath.Join(t.TempDir(), "agentauth.db"), axOptions{issuer: issuer, public: ln,
		authn: func(keys ports.Authenticator) ports.Authenticator { return gwIdP{keys} }})
	for _, target := range []string{issuer + introspectionEndpoint, h.url + "/api/v2/me", h.url + "/mcp/fs"} {
		req, err := http.NewRequest("POST", target, strings.NewReader("token=x"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer idp-token-fs-only")
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct { // the API's error body, or an OAuth one (RFC 6749 §5.2) with the code beside
			Error      any    `json:"error"`
			ReasonCode string `json:"reason_code"`
		}
		_ = json.NewDecoder(res.Body).Decode(&e)
		res.Body.Close()
		code := e.ReasonCode
		if d, ok := e.Error.(map[string]any); ok {
			code, _ = d["reason_code"].(string)
		}
		if res.StatusCode != 403 || code != domain.ReasonTokenGatewayOnly {
			t.Errorf("POST %s = %d %q, want 403 %s", target, res.StatusCode, code, domain.ReasonTokenGatewayOnly)
		}
	}
}
