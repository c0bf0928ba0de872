package rest_test

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
)

const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// TestBrowsersGetAPage: a request that prefers text/html gets the sign-in
// page for a 401 or a login error, with the status, the headers and the request id of
// the JSON answer, a way to sign in, every value escaped and no script; API
// clients keep JSON.
func TestBrowsersGetAPage(t *testing.T) {
	oidc := startOIDC(t, "http://127.0.0.1:1/auth/callback", testLoginCfg)
	apiKey := start(t, options{})
	tests := []struct {
		name     string
		url      string
		accept   string
		status   int
		wantPage bool
		has      []string
	}{
		{"browser, OIDC, no session", oidc.url + "/api/v2/me", browserAccept, 401, true,
			[]string{"<h1>Sign in to agentauth</h1>", `href="/auth/login?return_to=%2Fapi%2Fv2%2Fme"`, `action="/auth/login"`}},
		{"browser, callback of an unknown login", oidc.url + "/auth/callback?state=forged&code=x", browserAccept, 0, true,
			[]string{"<h1>Sign in to agentauth</h1>", `role="alert">The sign-in did not complete`, `href="/auth/login?return_to=%2Fconsole%2F"`}},
		{"browser, provider error with markup", oidc.url + "/auth/callback?state=s&error=%3Cscript%3Ealert(1)%3C%2Fscript%3E", browserAccept, 0, true,
			[]string{`href="/auth/login?return_to=%2Fconsole%2F"`}},
		{"browser, API-key mode", apiKey.url + "/api/v2/me", browserAccept, 401, true,
			[]string{"Authorization: Bearer &lt;credential&gt;"}},
		{"API client", oidc.url + "/api/v2/me", "application/json", 401, false, []string{`"code":"unauthenticated"`}},
		{"no Accept header", oidc.url + "/api/v2/me", "", 401, false, []string{`"code":"unauthenticated"`}},
		{"curl", oidc.url + "/api/v2/me", "*/*", 401, false, []string{`"code":"unauthenticated"`}},
		{"browser, unknown path without credential", apiKey.url + "/api/v2/nothing", browserAccept, 401, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			headers := map[string]string{}
			if tt.accept != "" {
				headers["Accept"] = tt.accept
			}
			resp, body := send(t, client(nil), http.MethodGet, tt.url, headers, "")
			if tt.status != 0 && resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if resp.StatusCode < 400 {
				t.Fatalf("status %d, want an error", resp.StatusCode)
			}
			isPage := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html")
			if isPage != tt.wantPage {
				t.Fatalf("Content-Type %q, page wanted: %v; body %.200s", resp.Header.Get("Content-Type"), tt.wantPage, body)
			}
			for _, h := range tt.has {
				if !strings.Contains(body, h) {
					t.Errorf("body lacks %q:\n%s", h, body)
				}
			}
			if resp.StatusCode == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if !strings.Contains(body, resp.Header.Get("X-Request-ID")) {
				t.Error("the answer does not carry its request id")
			}
			if !isPage {
				return
			}
			if strings.Contains(strings.ToLower(body), "<script") {
				t.Errorf("the page has a script or unescaped markup:\n%s", body)
			}
			style := body[strings.Index(body, "<style>")+len("<style>") : strings.Index(body, "</style>")]
			sum := sha256.Sum256([]byte(style))
			csp := resp.Header.Get("Content-Security-Policy")
			if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") {
				t.Errorf("Content-Security-Policy %q does not allow exactly the page's style", csp)
			}
		})
	}
}
