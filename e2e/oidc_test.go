//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentauth/agentauth/internal/testwait"
)

// TestOIDC runs the scenarios that share one provider and one service on
// the registered redirect port.
func TestOIDC(t *testing.T) {
	p := keycloak(t)
	s := startService(t, p, p.servicePort)
	s.waitReady(t)

	t.Run("HealthOK", func(t *testing.T) {
		status, body := get(t, noRedirects(nil), s.url+"/health", "")
		if status != http.StatusOK || !strings.Contains(body, `"ok"`) {
			t.Errorf("/health: got %d %s, want 200 ok", status, body)
		}
	})
	t.Run("Unauthenticated401", func(t *testing.T) {
		if status, _ := get(t, noRedirects(nil), s.url+"/api/v2/sessions", ""); status != http.StatusUnauthorized {
			t.Errorf("no credential: got %d, want 401", status)
		}
	})
	t.Run("CodeFlowInChromium", func(t *testing.T) { testCodeFlow(t, s) })
	t.Run("PasswordLoginRoles", func(t *testing.T) { testRoles(t, s) })
	t.Run("WrongPassword401", func(t *testing.T) {
		status, _, wrong := passwordLogin(t, s, "bob", "not-bob-pw")
		if status != http.StatusUnauthorized {
			t.Errorf("wrong password: got %d %s, want 401", status, wrong)
		}
		status, _, unknown := passwordLogin(t, s, "nobody", "x")
		if status != http.StatusUnauthorized || message(unknown) != message(wrong) {
			t.Errorf("unknown user: got %d %q, want 401 with the same message as a wrong password (%q)", status, message(unknown), message(wrong))
		}
	})
	t.Run("RepeatedFailures429", func(t *testing.T) {
		for i := 0; i < 5; i++ {
			if status, _, _ := passwordLogin(t, s, "erin", "wrong"); status != http.StatusUnauthorized {
				t.Fatalf("failure %d: got %d, want 401", i+1, status)
			}
		}
		body, _ := json.Marshal(map[string]string{"username": "erin", "password": "erin-pw"})
		req, _ := http.NewRequest(http.MethodPost, s.url+"/auth/login", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := noRedirects(nil).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Errorf("6th attempt, right password: got %d Retry-After=%q, want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	})
	t.Run("WrongClientSecret503", func(t *testing.T) { testWrongClientSecret(t, p) })
	t.Run("BearerTokens", func(t *testing.T) { testBearer(t, p, s) })
	t.Run("ForgedTokens401", func(t *testing.T) { testForged(t, p, s) })
	t.Run("Logout", func(t *testing.T) { testLogout(t, p, s) })
	t.Run("CSRF", func(t *testing.T) { testCSRF(t, s) })
	t.Run("CallbackStateChecks", func(t *testing.T) { testCallbackState(t, s) })
	t.Run("OIDCCheckCommand", func(t *testing.T) { testCheckCommand(t, p) })
}

// testCodeFlow signs alice in through the provider's own login page in
// Chromium (e2e/js/providers/browser-login.mjs, playwright-core): she lands
// on /api/v2/me as ADMIN with a user_session cookie that is HttpOnly,
// SameSite=Lax and not Secure on loopback http.
func testCodeFlow(t *testing.T, s *service) {
	bs := browserLogin(t, s, "alice", "alice-pw")
	if !slices.Equal(bs.Me.Roles, []string{"ADMIN"}) || bs.Me.Method != "oidc" {
		t.Errorf("browser /api/v2/me: got %+v, want ADMIN by oidc", bs.Me)
	}
}

func testRoles(t *testing.T, s *service) {
	tests := []struct {
		user, want, why string
	}{
		{"alice", "ADMIN", "realm role admin"},
		{"bob", "USER", "realm role user"},
		{"carol", "LEAD", "realm role lead through group /leads"},
		{"dave", "AUDITOR", "realm role auditor through group /auditors"},
		{"erin", "USER", "no role: USER by default"},
		{"frank", "USER", "prefixed role app-admin dropped"},
		{"grace", "USER", "admin of client other-app ignored"},
		{"henry", "LEAD", "client role lead of agentauth"},
		{"ivan", "USER", "realm role user"},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			status, jar, body := passwordLogin(t, s, tt.user, tt.user+"-pw")
			if status != http.StatusOK {
				t.Fatalf("POST /auth/login: got %d %s, want 200", status, body)
			}
			var lr struct {
				Roles []string `json:"roles"`
			}
			_ = json.Unmarshal([]byte(body), &lr)
			status, m := whoami(t, noRedirects(jar), s, "")
			if status != http.StatusOK {
				t.Fatalf("/api/v2/me with the cookie: got %d, want 200", status)
			}
			if !slices.Equal(m.Roles, []string{tt.want}) || !slices.Equal(lr.Roles, m.Roles) {
				t.Errorf("%s (%s): got roles %v (login said %v), want [%s]", tt.user, tt.why, m.Roles, lr.Roles, tt.want)
			}
		})
	}
	t.Run("form encoding", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, s.url+"/auth/login", strings.NewReader(url.Values{"username": {"dave"}, "password": {"dave-pw"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if status, body := do(t, noRedirects(newJar(t)), req); status != http.StatusOK {
			t.Errorf("form login: got %d %s, want 200", status, body)
		}
	})
}

func testBearer(t *testing.T, p *idp, s *service) {
	tok := grant(t, p, realmName, clientID, clientSecret, "dave", "dave-pw")
	c := noRedirects(nil)
	status, m := whoami(t, c, s, tok.AccessToken)
	if status != http.StatusOK || !slices.Equal(m.Roles, []string{"AUDITOR"}) || m.RoleSource != "access_token" {
		t.Errorf("access token as Bearer: got %d %+v, want 200 AUDITOR from access_token", status, m)
	}
	if status, _ := get(t, c, s.url+"/api/v2/audit", tok.AccessToken); status != http.StatusOK {
		t.Errorf("AUDITOR on the audit endpoint: got %d, want 200", status)
	}
	if status, _ := get(t, c, s.url+"/api/v2/admin/settings", tok.AccessToken); status != http.StatusForbidden {
		t.Errorf("AUDITOR on the admin settings endpoint: got %d, want 403", status)
	}
	for name, v := range map[string]string{"id_token": tok.IDToken, "refresh_token": tok.RefreshToken} {
		if status, _ := get(t, c, s.url+"/api/v2/me", v); status != http.StatusUnauthorized {
			t.Errorf("%s as Bearer: got %d, want 401", name, status)
		}
	}
}

// forge re-signs the payload of token with a key of our own under the
// provider's kid.
func forge(t *testing.T, token string, mut func(map[string]any)) string {
	t.Helper()
	parts := strings.Split(token, ".")
	hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
	pb, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var header struct {
		Kid string `json:"kid"`
	}
	var claims map[string]any
	_ = json.Unmarshal(hb, &header)
	_ = json.Unmarshal(pb, &claims)
	if mut != nil {
		mut(claims)
	}
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: header.Kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := jws.CompactSerialize()
	return out
}

func algNone(token string) string {
	parts := strings.Split(token, ".")
	return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
}

func testForged(t *testing.T, p *idp, s *service) {
	tok := grant(t, p, realmName, clientID, clientSecret, "alice", "alice-pw")
	otherIssuer := grant(t, p, "master", "admin-cli", "", "admin", "admin")
	otherClient := grant(t, p, realmName, "other-app", "other-app-secret", "alice", "alice-pw")
	tests := []struct{ name, token string }{
		{"alg none", algNone(tok.AccessToken)},
		{"bad signature", forge(t, tok.AccessToken, nil)},
		{"tampered payload, original signature", func() string {
			parts := strings.Split(tok.AccessToken, ".")
			pb, _ := base64.RawURLEncoding.DecodeString(parts[1])
			pb = []byte(strings.Replace(string(pb), `"alice"`, `"mallory"`, 1))
			return parts[0] + "." + base64.RawURLEncoding.EncodeToString(pb) + "." + parts[2]
		}()},
		{"other issuer (master realm)", otherIssuer.AccessToken},
		{"other client (other-app)", otherClient.AccessToken},
		{"expired (re-signed)", forge(t, tok.AccessToken, func(c map[string]any) { c["exp"] = float64(time.Now().Add(-time.Hour).Unix()) })},
		{"not a token", "definitely-not-a-token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if status, body := get(t, noRedirects(nil), s.url+"/api/v2/me", tt.token); status != http.StatusUnauthorized {
				t.Errorf("got %d %s, want 401", status, body)
			}
		})
	}
}

// testLogout: POST /auth/logout ends the session here (the cookie is
// cleared, the old one refused) and at Keycloak (the user has one session
// fewer there).
func testLogout(t *testing.T, p *idp, s *service) {
	sessions := func() int {
		kc, token := kcAdminAPI(t, p)
		ss, err := kc.GetUserSessions(context.Background(), token, realmName, userID(t, p, "bob"))
		if err != nil {
			t.Fatalf("bob's sessions at Keycloak: %v", err)
		}
		return len(ss)
	}
	status, jar, _ := passwordLogin(t, s, "bob", "bob-pw")
	if status != http.StatusOK {
		t.Fatalf("login: %d", status)
	}
	before := sessions()
	c := noRedirects(jar)
	if status, _ := whoami(t, c, s, ""); status != http.StatusOK {
		t.Fatalf("before logout: got %d, want 200", status)
	}
	u, _ := url.Parse(s.url)
	old := jar.Cookies(u)
	req, _ := http.NewRequest(http.MethodPost, s.url+"/auth/logout", nil)
	status, body := do(t, c, req)
	if status != http.StatusOK || !strings.Contains(body, "end_session_url") {
		t.Fatalf("logout: got %d %s, want 200 with end_session_url", status, body)
	}
	if len(jar.Cookies(u)) != 0 {
		t.Errorf("cookie not cleared: %v", jar.Cookies(u))
	}
	testwait.Until(t, time.Minute, "bob's session at Keycloak ended by the logout", func() (bool, string) {
		n := sessions()
		return n == before-1, fmt.Sprintf("%d sessions, %d before the logout", n, before)
	})
	// Replay the old cookie: refused at once.
	oldJar := newJar(t)
	oldJar.SetCookies(u, old)
	if status, _ := whoami(t, noRedirects(oldJar), s, ""); status != http.StatusUnauthorized {
		t.Errorf("old cookie after logout: got %d, want 401", status)
	}
}

func testCSRF(t *testing.T, s *service) {
	status, jar, _ := passwordLogin(t, s, "bob", "bob-pw")
	if status != http.StatusOK {
		t.Fatalf("login: %d", status)
	}
	c := noRedirects(jar)
	for _, h := range []map[string]string{{"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}} {
		req, _ := http.NewRequest(http.MethodPost, s.url+"/auth/logout", nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		if status, _ := do(t, c, req); status != http.StatusForbidden {
			t.Errorf("cross-site logout with %v: got %d, want 403", h, status)
		}
	}
	if status, _ := whoami(t, c, s, ""); status != http.StatusOK {
		t.Errorf("session after refused cross-site requests: got %d, want 200", status)
	}
	req, _ := http.NewRequest(http.MethodPost, s.url+"/auth/logout", nil)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if status, _ := do(t, c, req); status != http.StatusOK {
		t.Errorf("same-origin logout: got %d, want 200", status)
	}
}

func testCallbackState(t *testing.T, s *service) {
	c := noRedirects(nil)
	for name, q := range map[string]string{
		"missing state":  "code=abc",
		"unknown state":  "state=forged&code=abc",
		"provider error": "state=forged&error=access_denied",
	} {
		if status, _ := get(t, c, s.url+"/auth/callback?"+q, ""); status != http.StatusUnauthorized {
			t.Errorf("%s: got %d, want 401", name, status)
		}
	}
	if status, _ := get(t, c, s.url+"/auth/login?return_to=//evil.example/x", ""); status != http.StatusBadRequest {
		t.Errorf("return_to to another origin: got %d, want 400", status)
	}
	req, _ := http.NewRequest(http.MethodGet, s.url+"/auth/login", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	q := loc.Query()
	if resp.StatusCode != http.StatusFound || q.Get("code_challenge_method") != "S256" || q.Get("state") == "" || q.Get("nonce") == "" ||
		q.Get("scope") != "openid profile email" || q.Get("response_type") != "code" {
		t.Errorf("GET /auth/login: got %d to %s", resp.StatusCode, loc)
	}
}

// TestJWKSRotation: a token signed by a key the provider has just rotated
// in is accepted once the service fetches the new key on first sight of its
// kid (at most once per SERVICE_OIDC_JWKS_REFETCH), and a token of the
// previous, still published key stays valid. Against the stand-in: it
// rotates its keys on demand (/standin/rotate-keys) in one call.
func TestJWKSRotation(t *testing.T) {
	p := startStandin(t, 0)
	s := startService(t, p, 0)
	s.waitReady(t)
	before := grant(t, p, realmName, clientID, clientSecret, "alice", "alice-pw")
	resp, err := http.Post(p.base+"/standin/rotate-keys", "", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("rotate keys: %v %v", resp, err)
	}
	resp.Body.Close()
	after := grant(t, p, realmName, clientID, clientSecret, "alice", "alice-pw")
	if kid(after.AccessToken) == kid(before.AccessToken) {
		t.Fatalf("rotation did not change the kid")
	}
	// The new key is fetched on first sight of its kid (at most once per
	// SERVICE_OIDC_JWKS_REFETCH, 1s here).
	testwait.Until(t, time.Minute, "the token of the rotated key accepted as ADMIN", func() (bool, string) {
		status, m := whoami(t, noRedirects(nil), s, after.AccessToken)
		return status == http.StatusOK && slices.Equal(m.Roles, []string{"ADMIN"}), fmt.Sprint(status, m.Roles)
	})
	if status, _ := whoami(t, noRedirects(nil), s, before.AccessToken); status != http.StatusOK {
		t.Errorf("token of the previous key (still published): got %d, want 200", status)
	}
}

func kid(token string) string {
	hb, _ := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
	var h struct {
		Kid string `json:"kid"`
	}
	_ = json.Unmarshal(hb, &h)
	return h.Kid
}

// TestRefreshAndRoleRemoval: Keycloak issues agentauth's client 5-second
// access tokens (the client's access.token.lifespan, set through the admin
// API for this test). A cookie session keeps working past expiry by
// refreshing; a realm role removed in Keycloak's admin API is gone at the
// next refresh, for the session and for the user's managed key; an expired
// Bearer token is refused; a session Keycloak ended (the user signed out
// in its admin API) ends here at the next refresh, which Keycloak refuses.
func TestRefreshAndRoleRemoval(t *testing.T) {
	p := keycloak(t)
	setClientAttribute(t, p, clientID, "access.token.lifespan", "5")
	s := startService(t, p, 0, "SERVICE_OIDC_REFRESH_BEFORE=1s")
	s.waitReady(t)

	lead := grantRealmRole(t, p, "ivan", "lead")
	expired := grant(t, p, realmName, clientID, clientSecret, "bob", "bob-pw")
	if exp := expired.ExpiresIn; exp != 5 {
		t.Fatalf("access token lifetime: %d s, want 5 (the client's access.token.lifespan)", exp)
	}
	status, jar, body := passwordLogin(t, s, "ivan", "ivan-pw")
	if status != http.StatusOK || !strings.Contains(body, "LEAD") {
		t.Fatalf("login: got %d %s, want 200 with LEAD", status, body)
	}
	c := noRedirects(jar)
	key := makeKey(t, s, c, "me:read", "sessions:read", "sessions:team")
	if status, perms := keyPermissions(t, s, key); status != http.StatusOK || !slices.Equal(perms, []string{"me:read", "sessions:read", "sessions:team"}) {
		t.Fatalf("/me with ivan's key = %d %v, want the three permissions asked", status, perms)
	}

	lead.revoke(t)
	if status, m := whoami(t, c, s, ""); status != http.StatusOK || !slices.Contains(m.Roles, "LEAD") {
		t.Fatalf("before the access token expired: got %d %v, want LEAD still (nothing refreshed yet)", status, m.Roles)
	}
	testwait.Until(t, 60*time.Second, "ivan's session refreshed without LEAD", func() (bool, string) {
		status, m := whoami(t, c, s, "")
		if status != http.StatusOK {
			t.Fatalf("the session answered %d; want 200 before and after its refresh", status)
		}
		return !slices.Contains(m.Roles, "LEAD"), fmt.Sprint(m.Roles)
	})
	if status, perms := keyPermissions(t, s, key); status != http.StatusOK || !slices.Equal(perms, []string{"me:read", "sessions:read"}) {
		t.Errorf("/me with ivan's key after the refresh = %d %v, want sessions:team gone", status, perms)
	}
	// The session refreshes a second before its access token expires;
	// expired, issued before it, is refused once past its exp and the skew.
	testwait.Until(t, 30*time.Second, "bob's expired Bearer token refused", func() (bool, string) {
		status, _ := whoami(t, noRedirects(nil), s, expired.AccessToken)
		return status == http.StatusUnauthorized, fmt.Sprint(status)
	})

	// Keycloak ends bob's sessions (its admin API): the refresh is refused,
	// which ends the session here.
	status, jar, _ = passwordLogin(t, s, "bob", "bob-pw")
	if status != http.StatusOK {
		t.Fatalf("bob login: %d", status)
	}
	logoutUser(t, p, "bob")
	// The session answers 200 until its access token expires, then its
	// refresh is refused and it ends.
	testwait.Until(t, 60*time.Second, "bob's session ended at the refresh Keycloak refuses", func() (bool, string) {
		status, _ := whoami(t, noRedirects(jar), s, "")
		if status != http.StatusOK && status != http.StatusUnauthorized {
			t.Fatalf("the session answered %d; want 200, then 401", status)
		}
		return status == http.StatusUnauthorized, fmt.Sprint(status)
	})
	if status, _ := whoami(t, noRedirects(jar), s, ""); status != http.StatusUnauthorized {
		t.Errorf("the ended session again: got %d, want 401", status)
	}
}

// TestProviderDown: a service started before its provider answers 503 on
// logins and says which part is not ready; once the provider is up it
// becomes ready; when the provider stops, tokens of cached keys still
// authenticate and logins answer 503. Against the stand-in: it starts in
// about a second where Keycloak takes a minute here, and this test starts
// its provider late and stops it.
func TestProviderDown(t *testing.T) {
	port := freePort(t)
	dead := &idp{base: "http://127.0.0.1:" + itoa(port), issuer: "http://127.0.0.1:" + itoa(port) + "/realms/" + realmName, servicePort: freePort(t)}
	s := startService(t, dead, 0)

	// Liveness does not depend on the provider (no restart loop while it is
	// down); readiness does, and says why on the management listener.
	status, body := get(t, noRedirects(nil), s.url+"/health", "")
	if status != http.StatusOK || !strings.Contains(body, `"degraded"`) || !strings.Contains(body, `"oidc_discovery":"failing"`) {
		t.Errorf("/health before discovery: got %d %s, want 200 degraded naming oidc_discovery", status, body)
	}
	if status, body := get(t, noRedirects(nil), s.mgmt+"/health/live", ""); status != http.StatusOK {
		t.Errorf("/health/live before discovery: got %d %s, want 200", status, body)
	}
	status, body = get(t, noRedirects(nil), s.mgmt+"/health/ready", "")
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "oidc_discovery") || !strings.Contains(body, "connection refused") {
		t.Errorf("/health/ready before discovery: got %d %s, want 503 naming oidc_discovery and why", status, body)
	}
	if status, _, _ := passwordLogin(t, s, "alice", "alice-pw"); status != http.StatusServiceUnavailable {
		t.Errorf("POST /auth/login before discovery: got %d, want 503", status)
	}
	if status, _ := get(t, noRedirects(nil), s.url+"/auth/login", ""); status != http.StatusServiceUnavailable {
		t.Errorf("GET /auth/login before discovery: got %d, want 503", status)
	}

	p := startStandin(t, port)
	s.waitReady(t)
	tok := grant(t, p, realmName, clientID, clientSecret, "carol", "carol-pw")
	fresh := grant(t, p, realmName, clientID, clientSecret, "dave", "dave-pw")
	if status, _ := whoami(t, noRedirects(nil), s, tok.AccessToken); status != http.StatusOK {
		t.Fatalf("Bearer while the provider is up: got %d", status)
	}
	status, jar, _ := passwordLogin(t, s, "henry", "henry-pw")
	if status != http.StatusOK {
		t.Fatalf("login while the provider is up: %d", status)
	}

	p.stop()
	// Cached keys still serve, so the service stays ready.
	if status, body := get(t, noRedirects(nil), s.mgmt+"/health/ready", ""); status != http.StatusOK {
		t.Errorf("/health/ready with the provider stopped after discovery: got %d %s, want 200 (keys cached)", status, body)
	}
	if status, body := get(t, noRedirects(nil), s.url+"/health", ""); status != http.StatusOK || body != `{"status":"ok"}` {
		t.Errorf("/health with the provider stopped after discovery: got %d %s, want 200 ok", status, body)
	}
	if status, m := whoami(t, noRedirects(nil), s, tok.AccessToken); status != http.StatusOK || !slices.Equal(m.Roles, []string{"LEAD"}) {
		t.Errorf("cached Bearer token with the provider down: got %d %v, want 200 LEAD", status, m.Roles)
	}
	if status, m := whoami(t, noRedirects(nil), s, fresh.AccessToken); status != http.StatusOK || !slices.Equal(m.Roles, []string{"AUDITOR"}) {
		t.Errorf("unseen Bearer token of a cached key with the provider down: got %d %v, want 200 AUDITOR", status, m.Roles)
	}
	if status, _ := whoami(t, noRedirects(jar), s, ""); status != http.StatusOK {
		t.Errorf("session with a valid access token, provider down: got %d, want 200", status)
	}
	if status, _, _ := passwordLogin(t, s, "alice", "alice-pw"); status != http.StatusServiceUnavailable {
		t.Errorf("POST /auth/login with the provider down: got %d, want 503", status)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func message(body string) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(body), &e)
	return e.Error.Message
}

func testCheckCommand(t *testing.T, p *idp) {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"SERVICE_OIDC_ISSUER=" + p.issuer, "SERVICE_OIDC_CLIENT_ID=" + clientID,
		"SERVICE_OIDC_REDIRECT_URI=" + p.redirectURI()}
	tests := []struct {
		name, user, password string
		secret               string // the client secret configured ("": the realm's)
		wantExit             int
		want                 []string
	}{
		{"henry", "henry", "henry-pw", "", 0, []string{"ok    JWKS", "ok    client credentials", `kept     resource_access.agentauth.roles "lead" -> LEAD`, "role granted: LEAD (from id_token)"}},
		{"grace", "grace", "grace-pw", "", 0, []string{"role granted: USER (from default)", "resource_access.other-app: not our client id"}},
		{"frank", "frank", "frank-pw", "", 0, []string{`dropped  realm_access.roles           "app-admin"`, "role granted: USER"}},
		{"wrong password", "alice", "wrong", "", 1, []string{"FAIL  login"}},
		{"wrong client secret", "alice", "alice-pw", "not-the-client-secret-0001", 1, []string{`FAIL  client credentials: the provider refused client "agentauth"`, "SERVICE_OIDC_CLIENT_SECRET"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(binary, "oidc", "check", "--username", tt.user)
			cmd.Env = append(env, "SERVICE_OIDC_CLIENT_SECRET="+cmp.Or(tt.secret, clientSecret))
			cmd.Stdin = strings.NewReader(tt.password + "\n") // the password never goes on the command line
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantExit {
				t.Errorf("exit code: got %d, want %d\n%s", code, tt.wantExit, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// testWrongClientSecret: a service whose client secret the provider refuses
// (invalid_client) answers password logins 503, never 401 or 429 (the
// user is not to blame and no failure is counted), and readiness names
// oidc_client and the setting to fix.
func testWrongClientSecret(t *testing.T, p *idp) {
	s := startService(t, p, 0, "SERVICE_OIDC_CLIENT_SECRET=not-the-client-secret-0001")
	s.waitReady(t)
	for i := range 7 { // more than loginFailures (5): nothing is counted
		status, _, body := passwordLogin(t, s, "bob", "bob-pw")
		if status != http.StatusServiceUnavailable || strings.Contains(body, "invalid username or password") {
			t.Fatalf("login %d with a wrong client secret: got %d %s, want 503", i+1, status, body)
		}
	}
	status, body := get(t, noRedirects(nil), s.mgmt+"/health/ready", "")
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "oidc_client") || !strings.Contains(body, "SERVICE_OIDC_CLIENT_SECRET") {
		t.Errorf("/health/ready after the provider refused the client: got %d %s, want 503 naming oidc_client and SERVICE_OIDC_CLIENT_SECRET", status, body)
	}
}
