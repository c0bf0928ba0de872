//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestBasePath: with server.basePath /agentauth every route, the login
// endpoints and the callback included, is served under the prefix and
// nothing outside it; the session cookie is scoped to it; the redirect URI
// sent to the provider, the browser page's Sign-in link and the Location
// of a created resource carry it.
func TestBasePath(t *testing.T) {
	p := keycloak(t)
	port := freePort(t)
	const bp = "/agentauth"
	s := startService(t, p, port, "SERVICE_BASE_PATH="+bp,
		fmt.Sprintf("SERVICE_OIDC_REDIRECT_URI=http://127.0.0.1:%d%s/auth/callback", port, bp))
	s.waitReady(t)
	c := noRedirects(nil)
	for _, tc := range []struct {
		path string
		want int
	}{
		{bp + "/health", http.StatusOK},
		{bp + "/api/v2/me", http.StatusUnauthorized},
		{"/api/v2/me", http.StatusNotFound},
		{"/health", http.StatusNotFound},
		{bp + "x/api/v2/me", http.StatusNotFound},
		{bp + "/auth/callback", http.StatusUnauthorized}, // the callback is there (no state: 401)
	} {
		if status, body := get(t, c, s.url+tc.path, ""); status != tc.want {
			t.Errorf("GET %s: %d %s, want %d", tc.path, status, body, tc.want)
		}
	}

	req, _ := http.NewRequest(http.MethodGet, s.url+bp+"/auth/login?return_to=/api/v2/me", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc == nil || loc.Query().Get("redirect_uri") != fmt.Sprintf("http://127.0.0.1:%d%s/auth/callback", port, bp) {
		t.Errorf("GET %s/auth/login: %d Location %q, want 302 to the provider with the prefixed callback", bp, resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, ck := range resp.Cookies() {
		if ck.Path != bp+"/auth/callback" {
			t.Errorf("login state cookie path %q, want %s/auth/callback", ck.Path, bp)
		}
	}

	req, _ = http.NewRequest(http.MethodGet, s.url+bp+"/api/v2/sessions", nil)
	req.Header.Set("Accept", "text/html")
	if status, body := do(t, c, req); status != http.StatusUnauthorized || !strings.Contains(body, `href="`+bp+`/auth/login?return_to=%2fapi%2fv2%2fsessions"`) &&
		!strings.Contains(body, `href="`+bp+`/auth/login?return_to=%2Fapi%2Fv2%2Fsessions"`) {
		t.Errorf("browser page: %d, want a Sign-in link under %s:\n%s", status, bp, body)
	}

	jar := newJar(t)
	lc := noRedirects(jar)
	req, _ = http.NewRequest(http.MethodPost, s.url+bp+"/auth/login", strings.NewReader(`{"username":"erin","password":"erin-pw"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = lc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 1 || resp.Cookies()[0].Path != bp {
		t.Fatalf("password login under %s: %d cookies %v, want 200 and the session cookie on path %s", bp, resp.StatusCode, resp.Cookies(), bp)
	}
	if status, _ := get(t, lc, s.url+bp+"/api/v2/me", ""); status != http.StatusOK {
		t.Errorf("GET %s/api/v2/me with the cookie: %d, want 200", bp, status)
	}
	req, _ = http.NewRequest(http.MethodPost, s.url+bp+"/api/v2/sessions", strings.NewReader(`{"title":"under a prefix"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = lc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || !strings.HasPrefix(resp.Header.Get("Location"), bp+"/api/v2/sessions/") {
		t.Errorf("POST %s/api/v2/sessions: %d Location %q, want 201 at %s/api/v2/sessions/…", bp, resp.StatusCode, resp.Header.Get("Location"), bp)
	}
	form := url.Values{"logout_token": {"not-a-jwt"}}
	req, _ = http.NewRequest(http.MethodPost, s.url+bp+"/auth/backchannel-logout", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if status, _ := do(t, noRedirects(nil), req); status != http.StatusBadRequest {
		t.Errorf("POST %s/auth/backchannel-logout with garbage: %d, want 400", bp, status)
	}
}
