//go:build e2e

// Package e2e holds black-box tests of the built agentauth binary. Its
// OIDC tests run against the real Keycloak (internal/keycloakserver: the
// server distribution .ci/keycloak caches, started once per run as a
// loopback process, with deploy/keycloak/realm-agents.json imported, only
// its agentauth URLs moved to a free port). A few tests run against the
// Keycloak stand-in of e2e/keycloak-standin instead, each saying why: what
// it adds is faults on demand (a provider down, then up; forgetting its
// sessions; rotating its keys at once).
//
//	go test -tags e2e ./e2e/...
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/Nerzal/gocloak/v13"

	"github.com/agentauth/agentauth/internal/keycloakserver"
)

const (
	realmName    = "agents"
	clientID     = "agentauth"
	clientSecret = "agentauth-e2e-secret"
	// kcAdmin and kcAdminPassword are Keycloak's bootstrap admin (master
	// realm), given to it in its environment.
	kcAdmin         = "admin"
	kcAdminPassword = "admin"
)

var (
	binary string // the built agentauth
	repo   string // repository root
	// kc is the suite's Keycloak, started once in TestMain while the
	// binary builds; tests wait for it with keycloak(t).
	kc kcStart
)

// kcStart is the suite's one Keycloak start: done closes when srv or err
// is set.
type kcStart struct {
	done        chan struct{}
	srv         *keycloakserver.Server
	err         error
	servicePort int // the port of the agentauth URLs in its realm
	took        time.Duration
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	_, file, _, _ := runtime.Caller(0)
	repo = filepath.Dir(filepath.Dir(file))
	dir, err := os.MkdirTemp("", "agentauth-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	kc.servicePort, err = freePortNow()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	kcLog, err := os.Create(filepath.Join(dir, "keycloak.log"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kc.done = make(chan struct{})
	go func() {
		defer close(kc.done)
		start := time.Now()
		kc.srv, kc.err = keycloakserver.Start(context.Background(), keycloakserver.Options{
			RealmFile:   filepath.Join(repo, "deploy", "keycloak", "realm-agents.json"),
			ServicePort: kc.servicePort, AdminUser: kcAdmin, AdminPassword: kcAdminPassword, Log: kcLog,
		})
		kc.took = time.Since(start)
		if kc.err != nil {
			b, _ := os.ReadFile(kcLog.Name())
			kc.err = fmt.Errorf("%w\n--- keycloak log ---\n%s", kc.err, tail(string(b), 6000))
			return
		}
		fmt.Fprintf(os.Stderr, "e2e: Keycloak %s ready at %s in %s (started once for the suite)\n", keycloakserver.Version, kc.srv.URL, kc.took.Round(time.Millisecond))
	}()
	defer func() {
		<-kc.done
		if kc.srv != nil {
			if err := kc.srv.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "e2e:", err)
			}
		}
	}()
	binary = filepath.Join(dir, "agentauth")
	build := exec.Command("go", "build", "-o", binary, "./cmd/agentauth")
	build.Dir, build.Stdout, build.Stderr = repo, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: build agentauth:", err)
		return 1
	}
	if err := npmCI(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: keycloak stand-in dependencies:", err)
		return 1
	}
	return m.Run()
}

// npmCI installs the stand-in's pinned packages when they are missing.
func npmCI() error {
	dir := filepath.Join(repo, "e2e", "keycloak-standin")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "oidc-provider")); err == nil {
		return nil
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stderr, os.Stderr
	return cmd.Run()
}

// idp is the identity provider a test runs against.
type idp struct {
	base    string // http://127.0.0.1:P
	issuer  string // base + /realms/agents
	standin bool
	proc    *proc
	// servicePort is the port of the agentauth redirect URIs the provider
	// accepts: a service doing browser logins listens there.
	servicePort int
}

// redirectURI is the callback URL of a service on servicePort.
func (p *idp) redirectURI() string {
	return fmt.Sprintf("http://127.0.0.1:%d/auth/callback", p.servicePort)
}

func (p *idp) tokenURL(realm string) string {
	return p.base + "/realms/" + realm + "/protocol/openid-connect/token"
}

// keycloak waits for the suite's Keycloak and returns it. A service that
// signs users in through the browser, or receives Keycloak's back-channel
// logouts, listens on its servicePort.
func keycloak(t *testing.T) *idp {
	t.Helper()
	<-kc.done
	if kc.err != nil {
		t.Fatalf("Keycloak %s: %v", keycloakserver.Version, kc.err)
	}
	return &idp{base: kc.srv.URL, issuer: kc.srv.Issuer(realmName), servicePort: kc.servicePort}
}

// startStandin starts the Keycloak stand-in (e2e/keycloak-standin) on
// port (0: any free port) with the extra environment, its redirect URIs on
// a free port. Only tests that need what Keycloak cannot do on demand use
// it, and say why.
func startStandin(t *testing.T, port int, env ...string) *idp {
	t.Helper()
	servicePort := freePort(t)
	dir := filepath.Join(repo, "e2e", "keycloak-standin")
	cmd := exec.Command("node", "server.mjs", "--realm-file", filepath.Join(repo, "deploy", "keycloak", "realm-agents.json"),
		"--port", fmt.Sprint(port), "--service-url", fmt.Sprintf("http://127.0.0.1:%d", servicePort))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	p := &idp{standin: true, servicePort: servicePort}
	p.proc = startProc(t, cmd, "standin")
	line := p.proc.waitLine(t, hung, "listening on ")
	p.issuer = strings.TrimSpace(line[strings.Index(line, "http"):])
	p.base = strings.TrimSuffix(p.issuer, "/realms/"+realmName)
	return p
}

func (p *idp) stop() {
	if p.proc != nil {
		p.proc.stop()
	}
}

func logFile(t testing.TB, name string) io.Writer {
	f, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(f.Name())
			t.Logf("--- %s log ---\n%s", name, tail(string(b), 4000))
		}
		f.Close()
	})
	return f
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// service is a running agentauth.
type service struct {
	url  string
	mgmt string // the management listener
	cmd  *exec.Cmd
	proc *proc
}

// startService runs agentauth in OIDC mode against p on port (0: free;
// p.servicePort for browser logins).
func startService(t *testing.T, p *idp, port int, env ...string) *service {
	t.Helper()
	if port == 0 {
		port = freePort(t)
	} else if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
		t.Fatalf("port %d (of the redirect URIs the provider accepts) is taken: %v", port, err)
	} else {
		l.Close()
	}
	return startAgentauth(t, "agentauth", append([]string{
		"SERVICE_OIDC_ENABLED=true",
		"SERVICE_OIDC_ISSUER=" + p.issuer,
		"SERVICE_OIDC_CLIENT_ID=" + clientID,
		"SERVICE_OIDC_CLIENT_SECRET=" + clientSecret,
		"SERVICE_OIDC_REDIRECT_URI=" + p.redirectURI(),
		"SERVICE_OIDC_CLOCK_SKEW=1s",
		"SERVICE_OIDC_JWKS_REFETCH=1s",
		"SERVICE_PORT=" + fmt.Sprint(port),
		"SERVICE_LOG_LEVEL=debug",
	}, env...)...)
}

func freePort(t testing.TB) int {
	t.Helper()
	port, err := freePortNow()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// freePortNow is a port of 127.0.0.1 that was free a moment ago.
func freePortNow() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// noRedirects is a client that reports redirects instead of following
// them, with jar (nil: none).
func noRedirects(jar http.CookieJar) *http.Client {
	return &http.Client{
		Jar:           jar,
		Timeout:       15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func newJar(t *testing.T) http.CookieJar {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return jar
}

// get sends GET url with an optional Bearer token.
func get(t *testing.T, c *http.Client, u, bearer string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return do(t, c, req)
}

func do(t *testing.T, c *http.Client, req *http.Request) (int, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// me is the body of GET /api/v2/me.
type me struct {
	Subject    string   `json:"subject"`
	Roles      []string `json:"roles"`
	Method     string   `json:"method"`
	RoleSource string   `json:"role_source"`
}

func whoami(t *testing.T, c *http.Client, s *service, bearer string) (int, me) {
	t.Helper()
	status, body := get(t, c, s.url+"/api/v2/me", bearer)
	var m me
	if status == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("/api/v2/me body %q: %v", body, err)
		}
	}
	return status, m
}

// passwordLogin posts to /auth/login and returns the status and the jar
// holding the user_session cookie.
func passwordLogin(t *testing.T, s *service, user, password string) (int, http.CookieJar, string) {
	t.Helper()
	jar := newJar(t)
	body, _ := json.Marshal(map[string]string{"username": user, "password": password})
	req, _ := http.NewRequest(http.MethodPost, s.url+"/auth/login", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	status, resp := do(t, noRedirects(jar), req)
	return status, jar, resp
}

// tokens is a token endpoint response.
type tokens struct {
	AccessToken  string `json:"access_token"`
	IDToken      string `json:"id_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int    `json:"expires_in"`
}

// grant asks the provider's token endpoint for tokens by password.
func grant(t *testing.T, p *idp, realm, client, secret, user, password string) tokens {
	t.Helper()
	form := url.Values{"grant_type": {"password"}, "client_id": {client}, "username": {user}, "password": {password}, "scope": {"openid"}}
	if secret != "" {
		form.Set("client_secret", secret)
	}
	resp, err := http.PostForm(p.tokenURL(realm), form)
	if err != nil {
		t.Fatalf("token endpoint: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("password grant for %s at %s/%s: %d %s", user, realm, client, resp.StatusCode, b)
	}
	var tok tokens
	if err := json.Unmarshal(b, &tok); err != nil {
		t.Fatal(err)
	}
	return tok
}

// kcAdminAPI is Keycloak's admin API (gocloak) with a token of the
// bootstrap admin. Its calls use context.Background(): cleanups call it,
// after t.Context() has ended.
func kcAdminAPI(t *testing.T, p *idp) (*gocloak.GoCloak, string) {
	t.Helper()
	kc := gocloak.NewClient(p.base)
	admin, err := kc.LoginAdmin(context.Background(), kcAdmin, kcAdminPassword, "master")
	if err != nil {
		t.Fatalf("admin login: %v", err)
	}
	return kc, admin.AccessToken
}

// userID is the id of username in the realm.
func userID(t *testing.T, p *idp, username string) string {
	t.Helper()
	kc, token := kcAdminAPI(t, p)
	users, err := kc.GetUsers(context.Background(), token, realmName, gocloak.GetUsersParams{Username: gocloak.StringP(username), Exact: gocloak.BoolP(true)})
	if err != nil || len(users) != 1 {
		t.Fatalf("find %s: %v %v", username, users, err)
	}
	return *users[0].ID
}

// logoutUser ends every session of username at the provider (the admin
// API's POST /users/{id}/logout), as an administrator would.
func logoutUser(t *testing.T, p *idp, username string) {
	t.Helper()
	kc, token := kcAdminAPI(t, p)
	if err := kc.LogoutAllSessions(context.Background(), token, realmName, userID(t, p, username)); err != nil {
		t.Fatalf("admin logout of %s: %v", username, err)
	}
}

// setClientAttribute sets an attribute of a client of the realm through
// the admin API, and puts the old value back when the test ends.
func setClientAttribute(t *testing.T, p *idp, client, name, value string) {
	t.Helper()
	kc, token := kcAdminAPI(t, p)
	clients, err := kc.GetClients(context.Background(), token, realmName, gocloak.GetClientsParams{ClientID: gocloak.StringP(client)})
	if err != nil || len(clients) != 1 {
		t.Fatalf("find client %s: %v %v", client, clients, err)
	}
	c := clients[0]
	if c.Attributes == nil {
		c.Attributes = &map[string]string{}
	}
	old := (*c.Attributes)[name]
	(*c.Attributes)[name] = value
	if err := kc.UpdateClient(context.Background(), token, realmName, *c); err != nil {
		t.Fatalf("set %s of client %s: %v", name, client, err)
	}
	t.Cleanup(func() {
		kc, token := kcAdminAPI(t, p)
		(*c.Attributes)[name] = old
		if err := kc.UpdateClient(context.Background(), token, realmName, *c); err != nil {
			t.Errorf("put back %s of client %s: %v", name, client, err)
		}
	})
}

// realmRoleGrant is a realm role given to a user through Keycloak's admin
// API (gocloak), which the test takes back with revoke.
type realmRoleGrant struct {
	userID string
	revoke func(t *testing.T)
}

func grantRealmRole(t *testing.T, p *idp, username, role string) realmRoleGrant {
	t.Helper()
	ctx := context.Background()
	kc, token := kcAdminAPI(t, p)
	id := userID(t, p, username)
	r, err := kc.GetRealmRole(ctx, token, realmName, role)
	if err != nil {
		t.Fatalf("role %s: %v", role, err)
	}
	if err := kc.AddRealmRoleToUser(ctx, token, realmName, id, []gocloak.Role{*r}); err != nil {
		t.Fatalf("grant %s: %v", role, err)
	}
	revoked := false
	revoke := func(t *testing.T) {
		t.Helper()
		kc, token := kcAdminAPI(t, p)
		if err := kc.DeleteRealmRoleFromUser(ctx, token, realmName, id, []gocloak.Role{*r}); err != nil {
			t.Fatalf("remove %s: %v", role, err)
		}
		revoked = true
	}
	// The realm is the suite's: a test that fails before revoking leaves
	// the user as the realm file made it all the same.
	t.Cleanup(func() {
		if !revoked {
			revoke(t)
		}
	})
	return realmRoleGrant{userID: id, revoke: revoke}
}

// makeKey makes a managed key with permissions for the user of c's
// session cookie, expiring in a day, and returns it.
func makeKey(t *testing.T, s *service, c *http.Client, permissions ...string) managedKey {
	t.Helper()
	perms, _ := json.Marshal(permissions)
	req, _ := http.NewRequest(http.MethodPost, s.url+"/api/v2/keys", strings.NewReader(`{"name":"laptop script",`+
		`"permissions":`+string(perms)+`,"expires_at":"`+time.Now().Add(24*time.Hour).UTC().Format(time.RFC3339)+`"}`))
	req.Header.Set("Content-Type", "application/json")
	status, body := do(t, c, req)
	var k managedKey
	if err := json.Unmarshal([]byte(body), &k); status != http.StatusCreated || err != nil || !strings.HasPrefix(k.Key, "aak_") {
		t.Fatalf("POST /api/v2/keys with the session cookie = %d %s", status, body)
	}
	return k
}

type managedKey struct{ ID, Key string }

// keyPermissions is GET /api/v2/me with the key: the status and the
// permissions it has now.
func keyPermissions(t *testing.T, s *service, k managedKey) (int, []string) {
	t.Helper()
	status, body := get(t, noRedirects(nil), s.url+"/api/v2/me", k.Key)
	var m struct {
		Method      string   `json:"method"`
		Permissions []string `json:"permissions"`
	}
	_ = json.Unmarshal([]byte(body), &m)
	if status == http.StatusOK && m.Method != "managed_key" {
		t.Errorf("/me with the key: %s", body)
	}
	return status, m.Permissions
}
