package rest_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/netip"
	"net/textproto"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang/mock/gomock"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/adapters/rest"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
)

// checks is a HealthChecker the test sets.
type checks struct {
	mu sync.Mutex
	m  map[string]string
}

func (c *checks) Checks() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m
}

type oidcHarness struct {
	url    string
	mgmt   string // the management listener
	idp    *mocks.MockIdentityProvider
	health *checks
	srv    *rest.Server
	store  *rest.SQLite
}

// startOIDC runs a real server in OIDC mode on 127.0.0.1 with a real SQLite
// store and a mocked identity provider.
func startOIDC(t *testing.T, redirect string, cfg app.LoginConfig) oidcHarness {
	t.Helper()
	return startOIDCBehind(t, redirect, cfg, nil)
}

// startOIDCBehind is startOIDC with trusted proxies (rest.Config.TrustedProxies).
func startOIDCBehind(t *testing.T, redirect string, cfg app.LoginConfig, proxies []netip.Prefix) oidcHarness {
	t.Helper()
	log := zap.NewNop()
	store, closeStore, err := rest.OpenSQLite(filepath.Join(t.TempDir(), "agentauth.db"), log)
	if err != nil {
		t.Fatal(err)
	}
	audit, closeAudit := auditlog.New(store, auditlog.Options{}, log)
	authz, err := domain.NewAuthorizer(nil)
	if err != nil {
		t.Fatal(err)
	}
	idp := mocks.NewMockIdentityProvider(gomock.NewController(t))
	idp.EXPECT().Ready().Return(nil).AnyTimes()
	cfg.TokenKey = []byte("0123456789abcdef0123456789abcdef") // sealed at rest, as in production
	uc, err := app.NewLogin(cfg, idp, store, store, store, app.SystemClock{})
	if err != nil {
		t.Fatal(err)
	}
	h := &checks{m: map[string]string{"oidc_discovery": "ok", "oidc_jwks": "ok"}}
	login, err := rest.NewLogin(rest.LoginConfig{RedirectURI: redirect}, h, log)
	if err != nil {
		t.Fatal(err)
	}
	authn := &app.Credentials{Login: uc, Keys: testKeyring()}
	ready := rest.ReadyChecks{{Name: "database", Probe: store.Ping}, {Name: "audit_log", Probe: audit.Ready}}
	srv, err := rest.New(rest.Config{ShutdownTimeout: time.Second, Login: login, Ready: ready, TrustedProxies: proxies}, app.NewApplication(app.Dependencies{Stores: store.Stores(),
		Authenticator: authn, Authorizer: authz, AuditLog: audit, Clock: app.SystemClock{}, Login: uc}), log)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeWithManagement(ctx, ln, mln) }()
	t.Cleanup(func() {
		cancel()
		<-done
		closeAudit()
		closeStore()
	})
	return oidcHarness{url: "http://" + ln.Addr().String(), mgmt: "http://" + mln.Addr().String(), idp: idp, health: h, srv: srv, store: store}
}

var testLoginCfg = app.LoginConfig{PasswordLogin: true, SessionIdle: time.Hour, SessionMax: 8 * time.Hour,
	RefreshBefore: time.Minute, LoginFailures: 2, LoginWindow: time.Minute}

func tokensFor(roles ...domain.Role) ports.TokenSet {
	now := time.Now()
	return ports.TokenSet{Subject: "sub-" + string(roles[0]), Username: "u", Roles: domain.RoleExtraction{Roles: roles, Source: domain.TokenID},
		AccessToken: "at", RefreshToken: "rt", IDToken: "it", AccessExpiry: now.Add(5 * time.Minute)}
}

func client(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func send(t *testing.T, c *http.Client, method, u string, headers map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

var jsonCT = map[string]string{"Content-Type": "application/json"}

// TestProbesFollowOIDCReadiness: GET /health on the API port is liveness,
// 200 whatever the provider does, naming what is not ready without error
// details; the management listener's /health/ready answers 503 with the
// failing checks in full, /health/live 200. Neither needs a credential.
func TestProbesFollowOIDCReadiness(t *testing.T) {
	h := startOIDC(t, "http://127.0.0.1:1/auth/callback", testLoginCfg)
	tests := []struct {
		name       string
		oidc       map[string]string
		wantHealth string // body of /health
		wantReady  int
		readyHas   string
	}{
		{"provider down at start", map[string]string{"oidc_discovery": "failing: dial tcp 10.1.2.3:8443: connection refused", "oidc_jwks": "pending"},
			`{"checks":{"oidc_discovery":"failing","oidc_jwks":"pending"},"status":"degraded"}`, 503, "10.1.2.3:8443: connection refused"},
		{"untrusted certificate", map[string]string{"oidc_discovery": "failing: x509", "oidc_jwks": "pending", "oidc_tls": "provider certificate not trusted: set SERVICE_OIDC_CA_FILE"},
			`{"checks":{"oidc_discovery":"failing","oidc_jwks":"pending","oidc_tls":"provider certificate not trusted"},"status":"degraded"}`, 503, "SERVICE_OIDC_CA_FILE"},
		{"ready", map[string]string{"oidc_discovery": "ok", "oidc_jwks": "ok"}, `{"status":"ok"}`, 200, `"database":"ok"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.health.mu.Lock()
			h.health.m = tt.oidc
			h.health.mu.Unlock()
			resp, body := send(t, client(nil), http.MethodGet, h.url+"/health", nil, "")
			if resp.StatusCode != http.StatusOK || body != tt.wantHealth {
				t.Errorf("/health: got %d %s, want 200 %s", resp.StatusCode, body, tt.wantHealth)
			}
			resp, body = send(t, client(nil), http.MethodGet, h.mgmt+"/health/ready", nil, "")
			if resp.StatusCode != tt.wantReady || !strings.Contains(body, tt.readyHas) || !strings.Contains(body, `"audit_log":"ok"`) {
				t.Errorf("/health/ready: got %d %s, want %d with %s and every check", resp.StatusCode, body, tt.wantReady, tt.readyHas)
			}
			resp, body = send(t, client(nil), http.MethodGet, h.mgmt+"/health/live", nil, "")
			if resp.StatusCode != http.StatusOK || body != `{"status":"ok"}` {
				t.Errorf("/health/live: got %d %s, want 200 ok", resp.StatusCode, body)
			}
		})
	}
}

// TestManagementListener: metrics without a credential and without audit
// records; nothing else is served there.
func TestManagementListener(t *testing.T) {
	h := startOIDC(t, "http://127.0.0.1:1/auth/callback", testLoginCfg)
	send(t, client(nil), http.MethodGet, h.url+"/api/v2/me", nil, "") // one audited request
	before, err := h.store.AuditChain(context.Background(), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, path string
		want         int
		has          string
	}{
		{http.MethodGet, "/metrics", 200, "agentauth_http_requests_total"},
		{http.MethodGet, "/metrics", 200, "agentauth_build_info{go_version="},
		{http.MethodGet, "/metrics", 200, `agentauth_login_attempts_total{kind="password",outcome="locked_out"}`},
		{http.MethodGet, "/metrics", 200, "agentauth_audit_commit_duration_seconds_bucket"},
		{http.MethodGet, "/health/ready", 200, `"status":"ok"`},
		{http.MethodGet, "/health/live", 200, `"status":"ok"`},
		{http.MethodGet, "/api/v2/me", 404, ""},
		{http.MethodGet, "/health", 404, ""},
		{http.MethodPost, "/metrics", 405, ""},
	}
	for _, tt := range tests {
		resp, body := send(t, client(nil), tt.method, h.mgmt+tt.path, nil, "")
		if resp.StatusCode != tt.want || !strings.Contains(body, tt.has) {
			t.Errorf("%s %s: got %d %.200s, want %d with %q", tt.method, tt.path, resp.StatusCode, body, tt.want, tt.has)
		}
	}
	after, err := h.store.AuditChain(context.Background(), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("the management listener wrote %d audit records, want none", len(after)-len(before))
	}
	// The API port's /metrics still needs a credential.
	if resp, _ := send(t, client(nil), http.MethodGet, h.url+"/metrics", nil, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /metrics on the API port without a credential: got %d, want 401", resp.StatusCode)
	}
}

func TestCodeFlowEndpoints(t *testing.T) {
	h := startOIDC(t, "http://127.0.0.1:1/auth/callback", testLoginCfg)
	var req ports.AuthRequest
	h.idp.EXPECT().AuthCodeURL(gomock.Any()).DoAndReturn(func(r ports.AuthRequest) (string, error) {
		req = r
		return "http://idp.test/auth?state=" + url.QueryEscape(r.State), nil
	}).Times(2)
	browser, _ := cookiejar.New(nil) // keeps the cookie that binds the state to this browser
	c := client(browser)
	resp, _ := send(t, c, http.MethodGet, h.url+"/auth/login?return_to=/api/v2/me", nil, "")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(resp.Header.Get("Location"), "http://idp.test/auth?state=") || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET /auth/login: got %d Location=%q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// The provider redirects back: code exchanged once, cookie set.
	h.idp.EXPECT().ExchangeCode(gomock.Any(), "code-1", gomock.Any()).DoAndReturn(func(_ context.Context, _ string, got ports.AuthRequest) (ports.TokenSet, error) {
		if got.Nonce != req.Nonce || got.CodeVerifier != req.CodeVerifier {
			t.Errorf("exchange with nonce/verifier %q/%q, want %q/%q", got.Nonce, got.CodeVerifier, req.Nonce, req.CodeVerifier)
		}
		return tokensFor(domain.RoleLead), nil
	}).Times(1)
	cb := h.url + "/auth/callback?state=" + url.QueryEscape(req.State) + "&code=code-1"
	resp, body := send(t, c, http.MethodGet, cb, nil, "")
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/api/v2/me" {
		t.Fatalf("callback: got %d %s Location=%q", resp.StatusCode, body, resp.Header.Get("Location"))
	}
	setCookie := strings.ToLower(sessionSetCookie(resp)) // attribute names are case-insensitive
	for _, want := range []string{"user_session=", "httponly", "samesite=lax", "path=/"} {
		if !strings.Contains(setCookie, want) {
			t.Errorf("Set-Cookie %q lacks %s", setCookie, want)
		}
	}
	for _, unwanted := range []string{"domain=", "secure"} {
		if strings.Contains(setCookie, unwanted) {
			t.Errorf("Set-Cookie %q has %s (plain-http loopback)", setCookie, unwanted)
		}
	}
	first := sessionCookie(resp)
	// Replaying the callback is refused without calling the token endpoint.
	if resp, _ := send(t, c, http.MethodGet, cb, nil, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("replayed callback: got %d, want 401", resp.StatusCode)
	}
	// The cookie authenticates.
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(h.url)
	jar.SetCookies(u, []*http.Cookie{first})
	if resp, body := send(t, client(jar), http.MethodGet, h.url+"/api/v2/me", nil, ""); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"LEAD"`) {
		t.Errorf("/api/v2/me with the cookie: got %d %s", resp.StatusCode, body)
	}
	// A second login gets a new session id.
	send(t, c, http.MethodGet, h.url+"/auth/login", nil, "")
	h.idp.EXPECT().ExchangeCode(gomock.Any(), "code-2", gomock.Any()).Return(tokensFor(domain.RoleLead), nil)
	resp, _ = send(t, c, http.MethodGet, h.url+"/auth/callback?state="+url.QueryEscape(req.State)+"&code=code-2", nil, "")
	if second := sessionCookie(resp); resp.StatusCode != http.StatusFound || second.Value == "" || second.Value == first.Value || resp.Header.Get("Location") != "/" {
		t.Errorf("second login: got %d, cookie %q (first %q), Location=%q", resp.StatusCode, second.Value, first.Value, resp.Header.Get("Location"))
	}
	// The authorization codes are in no audit record: each callback's
	// record keeps the state and a marker in the code's place.
	recs, err := h.store.AuditChain(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	callbacks := 0
	for _, rec := range recs {
		if strings.Contains(rec.Path, "code-1") || strings.Contains(rec.Path, "code-2") {
			t.Errorf("audit record %d holds an authorization code: %q", rec.Seq, rec.Path)
		}
		if strings.HasPrefix(rec.Path, "/auth/callback?") && strings.Contains(rec.Path, "&code="+domain.RedactedMarker) {
			callbacks++
		}
	}
	if callbacks != 3 {
		t.Errorf("%d callback records with the code's marker, want 3 (two logins and a replay)", callbacks)
	}
}

// sessionSetCookie is the Set-Cookie header of user_session ("" if none).
func sessionSetCookie(resp *http.Response) string {
	for _, v := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(v, rest.SessionCookie+"=") {
			return v
		}
	}
	return ""
}

// sessionCookie is the user_session cookie the response sets.
func sessionCookie(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == rest.SessionCookie {
			return c
		}
	}
	return &http.Cookie{}
}

func TestSecureCookieOffLoopback(t *testing.T) {
	tests := []struct {
		redirect string
		secure   bool
	}{
		{"https://agents.example.com/auth/callback", true},
		{"https://127.0.0.1/auth/callback", true},
		// A name that merely starts like a loopback address is not one.
		{"http://127.agents.example.com/auth/callback", true},
		{"http://127.0.0.1:8080/auth/callback", false},
		{"http://[::1]:8080/auth/callback", false},
		{"http://localhost:8080/auth/callback", false},
	}
	for _, tt := range tests {
		t.Run(tt.redirect, func(t *testing.T) {
			h := startOIDC(t, tt.redirect, testLoginCfg)
			h.idp.EXPECT().PasswordGrant(gomock.Any(), "alice", "pw").Return(tokensFor(domain.RoleAdmin), nil)
			resp, _ := send(t, client(nil), http.MethodPost, h.url+"/auth/login", jsonCT, `{"username":"alice","password":"pw"}`)
			sc := resp.Header.Get("Set-Cookie")
			if resp.StatusCode != http.StatusOK || strings.Contains(strings.ToLower(sc), "; secure") != tt.secure {
				t.Errorf("got %d Set-Cookie %q, want Secure=%v", resp.StatusCode, sc, tt.secure)
			}
		})
	}
}

// TestLoginLimitsPerClientBehindAProxy: behind a trusted proxy every
// request comes from the proxy's address; the limits count the client that
// X-Forwarded-For names, so a stranger's failed guesses lock out neither
// the user at another address nor everyone behind the proxy.
func TestLoginLimitsPerClientBehindAProxy(t *testing.T) {
	h := startOIDCBehind(t, "http://127.0.0.1:1/auth/callback", testLoginCfg, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	h.idp.EXPECT().PasswordGrant(gomock.Any(), "alice", "bad").Return(ports.TokenSet{}, fmt.Errorf("no: %w", domain.ErrUnauthenticated)).Times(testLoginCfg.LoginFailures)
	h.idp.EXPECT().PasswordGrant(gomock.Any(), "alice", "pw").Return(tokensFor(domain.RoleUser), nil).Times(1)
	login := func(from, password string) int {
		resp, _ := send(t, client(nil), http.MethodPost, h.url+"/auth/login",
			map[string]string{"Content-Type": "application/json", "X-Forwarded-For": from}, `{"username":"alice","password":"`+password+`"}`)
		return resp.StatusCode
	}
	for i := range testLoginCfg.LoginFailures {
		if got := login("203.0.113.66", "bad"); got != http.StatusUnauthorized {
			t.Fatalf("stranger's guess %d: got %d, want 401", i, got)
		}
	}
	if got := login("203.0.113.66", "pw"); got != http.StatusTooManyRequests {
		t.Errorf("the stranger's address after its failures: got %d, want 429", got)
	}
	if got := login("192.0.2.10", "pw"); got != http.StatusOK {
		t.Errorf("alice at her own address behind the same proxy: got %d, want 200", got)
	}
}

func TestPasswordLoginEndpoint(t *testing.T) {
	h := startOIDC(t, "http://127.0.0.1:1/auth/callback", testLoginCfg)
	h.idp.EXPECT().PasswordGrant(gomock.Any(), "alice", "pw").Return(tokensFor(domain.RoleAdmin), nil).Times(2)
	h.idp.EXPECT().PasswordGrant(gomock.Any(), "alice", "bad").Return(ports.TokenSet{}, fmt.Errorf("no: %w", domain.ErrUnauthenticated)).Times(2)

	jar, _ := cookiejar.New(nil)
	resp, body := send(t, client(jar), http.MethodPost, h.url+"/auth/login", jsonCT, `{"username":"alice","password":"pw"}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"roles":["ADMIN"]`) || !strings.Contains(body, `"expires_at"`) {
		t.Fatalf("JSON login: got %d %s", resp.StatusCode, body)
	}
	resp, _ = send(t, client(nil), http.MethodPost, h.url+"/auth/login", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, "username=alice&password=pw")
	if resp.StatusCode != http.StatusOK {
		t.Errorf("form login: got %d", resp.StatusCode)
	}
	tests := []struct {
		name, ct, body string
		want           int
	}{
		{"wrong password", "application/json", `{"username":"alice","password":"bad"}`, http.StatusUnauthorized},
		{"wrong password again", "application/json", `{"username":"alice","password":"bad"}`, http.StatusUnauthorized},
		{"limit reached", "application/json", `{"username":"alice","password":"pw"}`, http.StatusTooManyRequests},
		{"missing password", "application/json", `{"username":"bob"}`, http.StatusBadRequest},
		{"unknown field", "application/json", `{"username":"bob","password":"x","otp":"1"}`, http.StatusBadRequest},
		{"plain text", "text/plain", `username=bob`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		resp, body := send(t, client(nil), http.MethodPost, h.url+"/auth/login", map[string]string{"Content-Type": tt.ct}, tt.body)
		if resp.StatusCode != tt.want {
			t.Errorf("%s: got %d %s, want %d", tt.name, resp.StatusCode, body, tt.want)
		}
		if tt.want == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", tt.name)
		}
	}

	// Logout: 200, cookie cleared, the old cookie refused.
	u, _ := url.Parse(h.url)
	old := jar.Cookies(u)
	h.idp.EXPECT().Logout(gomock.Any(), "rt").Return(nil)
	h.idp.EXPECT().EndSessionURL("it").Return("http://idp.test/logout")
	resp, body = send(t, client(jar), http.MethodPost, h.url+"/auth/logout", nil, "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "http://idp.test/logout") || !strings.Contains(resp.Header.Get("Set-Cookie"), "user_session=;") {
		t.Errorf("logout: got %d %s Set-Cookie %q", resp.StatusCode, body, resp.Header.Get("Set-Cookie"))
	}
	oldJar, _ := cookiejar.New(nil)
	oldJar.SetCookies(u, old)
	if resp, _ := send(t, client(oldJar), http.MethodGet, h.url+"/api/v2/me", nil, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("old cookie after logout: got %d, want 401", resp.StatusCode)
	}
	if resp, _ := send(t, client(nil), http.MethodPost, h.url+"/auth/logout", nil, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("logout without a cookie: got %d, want 401", resp.StatusCode)
	}
}

func TestCSRFOnCookieRequests(t *testing.T) {
	h := startOIDC(t, "http://127.0.0.1:1/auth/callback", testLoginCfg)
	h.idp.EXPECT().PasswordGrant(gomock.Any(), gomock.Any(), gomock.Any()).Return(tokensFor(domain.RoleUser), nil)
	jar, _ := cookiejar.New(nil)
	if resp, _ := send(t, client(jar), http.MethodPost, h.url+"/auth/login", jsonCT, `{"username":"u","password":"p"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	create := `{"title":"t"}`
	tests := []struct {
		name    string
		headers map[string]string
		jar     http.CookieJar
		want    int
	}{
		{"cookie, cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site"}, jar, http.StatusForbidden},
		{"cookie, same-site other origin", map[string]string{"Sec-Fetch-Site": "same-site"}, jar, http.StatusForbidden},
		{"cookie, foreign Origin", map[string]string{"Origin": "https://evil.example"}, jar, http.StatusForbidden},
		{"cookie, our Origin", map[string]string{"Origin": "http://127.0.0.1:1"}, jar, http.StatusCreated},
		{"cookie, same-origin fetch", map[string]string{"Sec-Fetch-Site": "same-origin"}, jar, http.StatusCreated},
		{"cookie, no browser headers", nil, jar, http.StatusCreated},
		{"cookie, no Origin, foreign Referer", map[string]string{"Referer": "https://evil.example/page"}, jar, http.StatusForbidden},
		{"cookie, no Origin, our Referer", map[string]string{"Referer": "http://127.0.0.1:1/console/sessions"}, jar, http.StatusCreated},
		{"Bearer, foreign Origin", map[string]string{"Origin": "https://evil.example", "Authorization": "Bearer " + keyUser}, nil, http.StatusCreated},
	}
	for _, tt := range tests {
		hdr := map[string]string{"Content-Type": "application/json"}
		for k, v := range tt.headers {
			hdr[k] = v
		}
		if resp, body := send(t, client(tt.jar), http.MethodPost, h.url+"/api/v2/sessions", hdr, create); resp.StatusCode != tt.want {
			t.Errorf("%s: got %d %s, want %d", tt.name, resp.StatusCode, body, tt.want)
		}
	}
	if resp, _ := send(t, client(nil), http.MethodPost, h.url+"/auth/login", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, `{"username":"u","password":"p"}`); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site password login (login CSRF): got %d, want 403", resp.StatusCode)
	}
}

// FuzzCredentials sends arbitrary Authorization and Cookie headers: the
// answer is always 401 (or 400 for a header the HTTP parser refuses), never
// a 500, never a panic, never access. The seed corpus in
// testdata/fuzz/FuzzCredentials holds forged tokens (alg none, bad
// signature, other issuer, other client, expired).
func FuzzCredentials(f *testing.F) {
	f.Add("Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", "")
	f.Add("", "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ")
	f.Add("Basic dXNlcjpwdw==", "user_session")
	f.Add("bearer  ", "\x00")
	f.Add("Bearer "+keyAdmin+"\u00a0", "")     // a valid key, then a no-break space
	f.Add("Bearer "+keyAdmin+"\u0085", "")     // NEL, also trimmed by strings.TrimSpace
	f.Add("Bearer\u00a0"+keyAdmin, "")         // no ASCII separator
	f.Add("Bearer "+keyAdmin+" "+keyAdmin, "") // two credentials in one header
	h := startOIDCForFuzz(f)
	f.Fuzz(func(t *testing.T, authorization, cookie string) {
		req, err := http.NewRequest(http.MethodGet, "/api/v2/me", nil)
		if err != nil {
			t.Skip()
		}
		if authorization != "" {
			req.Header["Authorization"] = []string{authorization}
		}
		if cookie != "" {
			req.Header["Cookie"] = []string{"user_session=" + cookie}
		}
		resp, err := h.srv.App().Test(req, -1)
		if err != nil {
			return // the request could not be written: nothing reached the server
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && presentsTestKey(authorization) {
			return // one of the keyring's keys, sent correctly: the one way in
		}
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusBadRequest, http.StatusRequestHeaderFieldsTooLarge:
		default:
			t.Fatalf("Authorization %q Cookie %q: got %d, want 401", authorization, cookie, resp.StatusCode)
		}
	})
}

// presentsTestKey reports whether authorization, as the server receives it,
// is a correct Bearer header carrying one of testKeyring's keys (RFC 6750:
// the scheme in any case, then spaces or tabs, then the credential and
// nothing else). The fuzzer finds them by mutating the seeds that wrap a key
// in a forbidden character.
func presentsTestKey(authorization string) bool {
	v := received(authorization)
	if len(v) < len("Bearer ") || !strings.EqualFold(v[:len("Bearer")], "Bearer") {
		return false
	}
	rest := v[len("Bearer"):]
	key := strings.TrimLeft(rest, " \t")
	if key == rest {
		return false
	}
	return slices.Contains([]string{keyAdmin, keyUser, keyUser2, keyLead, keyAuditor}, key)
}

// received is a header value as the server reads it: net/http's client
// writes CR and LF as spaces and drops leading and trailing ASCII
// whitespace (http.Header.Write), and HTTP excludes the whitespace around
// a field value from it (RFC 9110 §5.5), so "Bearer <key> " is the key.
func received(value string) string {
	return textproto.TrimString(strings.NewReplacer("\n", " ", "\r", " ").Replace(value))
}

// startOIDCForFuzz is startOIDC for a fuzz target (one server for all
// inputs; the provider is never reached because no credential is valid).
func startOIDCForFuzz(f *testing.F) oidcHarness {
	var h oidcHarness
	log := zap.NewNop()
	store, closeStore, err := rest.OpenSQLite(filepath.Join(f.TempDir(), "agentauth.db"), log)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(closeStore)
	audit, closeAudit := auditlog.New(store, auditlog.Options{}, log)
	f.Cleanup(closeAudit)
	authz, _ := domain.NewAuthorizer(nil)
	uc, err := app.NewLogin(testLoginCfg, nil, store, store, store, app.SystemClock{})
	if err != nil {
		f.Fatal(err)
	}
	login, err := rest.NewLogin(rest.LoginConfig{RedirectURI: "http://127.0.0.1:1/auth/callback"}, &checks{m: map[string]string{"oidc_discovery": "ok"}}, log)
	if err != nil {
		f.Fatal(err)
	}
	authn := &app.Credentials{Login: uc, Keys: testKeyring()}
	h.srv, err = rest.New(rest.Config{ShutdownTimeout: time.Second, Login: login}, app.NewApplication(app.Dependencies{Stores: store.Stores(), Authenticator: authn,
		Authorizer: authz, AuditLog: audit, Clock: app.SystemClock{}, Login: uc}), log)
	if err != nil {
		f.Fatal(err)
	}
	return h
}

// TestLoginCSRFPathVariants: Fiber routes paths case-insensitively and with
// an optional trailing slash, so every spelling that reaches the password
// login must get the login-CSRF check too.
func TestLoginCSRFPathVariants(t *testing.T) {
	h := startOIDC(t, "http://127.0.0.1:1/auth/callback", testLoginCfg)
	h.idp.EXPECT().PasswordGrant(gomock.Any(), gomock.Any(), gomock.Any()).Return(tokensFor(domain.RoleUser), nil).AnyTimes()
	for _, path := range []string{"/auth/login", "/auth/login/", "/AUTH/LOGIN", "/Auth/Login/"} {
		t.Run(path, func(t *testing.T) {
			hdr := map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}
			resp, body := send(t, client(nil), http.MethodPost, h.url+path, hdr, `{"username":"u","password":"p"}`)
			if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Set-Cookie") != "" {
				t.Errorf("cross-site POST %s: got %d %s (Set-Cookie %q), want 403 and no cookie", path, resp.StatusCode, body, resp.Header.Get("Set-Cookie"))
			}
		})
	}
}

// TestCallbackBoundToBrowser: the state is kept server-side, so it must also
// be bound to the browser that started the login; otherwise an attacker
// starts a login, signs in at the provider as himself and sends the victim
// the callback URL, and the victim's browser ends up in the attacker's
// session (login CSRF, RFC 6749 §10.12).
func TestCallbackBoundToBrowser(t *testing.T) {
	h := startOIDC(t, "http://127.0.0.1:1/auth/callback", testLoginCfg)
	var states []string
	h.idp.EXPECT().AuthCodeURL(gomock.Any()).DoAndReturn(func(r ports.AuthRequest) (string, error) {
		states = append(states, r.State)
		return "http://idp.test/auth?client_id=x&state=" + url.QueryEscape(r.State), nil
	}).AnyTimes()
	h.idp.EXPECT().ExchangeCode(gomock.Any(), gomock.Any(), gomock.Any()).Return(tokensFor(domain.RoleUser), nil).AnyTimes()

	attackerJar, _ := cookiejar.New(nil)
	browserJar, _ := cookiejar.New(nil)
	begin := func(jar http.CookieJar) string {
		resp, _ := send(t, client(jar), http.MethodGet, h.url+"/auth/login", nil, "")
		if resp.StatusCode != http.StatusFound {
			t.Fatalf("GET /auth/login: %d", resp.StatusCode)
		}
		return states[len(states)-1]
	}
	attackerState := begin(attackerJar)
	tabOne := begin(browserJar)
	tabTwo := begin(browserJar) // a second tab of the same browser
	otherJar, _ := cookiejar.New(nil)
	tests := []struct {
		name  string
		jar   http.CookieJar
		state string
		want  int
	}{
		{"attacker's state in the victim's browser", browserJar, attackerState, http.StatusUnauthorized},
		{"attacker's state in a fresh browser", otherJar, attackerState, http.StatusUnauthorized},
		{"first tab", browserJar, tabOne, http.StatusFound},
		{"second tab", browserJar, tabTwo, http.StatusFound},
		{"attacker's own browser", attackerJar, attackerState, http.StatusFound},
	}
	for _, tt := range tests {
		resp, body := send(t, client(tt.jar), http.MethodGet, h.url+"/auth/callback?code=c&state="+url.QueryEscape(tt.state), nil, "")
		if resp.StatusCode != tt.want {
			t.Errorf("%s: got %d %s, want %d", tt.name, resp.StatusCode, body, tt.want)
		}
		if tt.want != http.StatusFound && sessionSetCookie(resp) != "" {
			t.Errorf("%s: a session cookie was set", tt.name)
		}
	}
}
