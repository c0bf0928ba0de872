//go:build e2e

// Package e2e holds black-box tests of the built agentauth binary in OIDC
// mode against Keycloak: a real Keycloak when E2E_KEYCLOAK_URL names one
// (with deploy/keycloak/realm-agents.json imported), else the Keycloak
// stand-in of e2e/keycloak-standin (panva's oidc-provider behind Keycloak's
// URLs, configured from the same realm file), started with Node. The suite
// prints which one it ran against.
//
// Every process binds a free port. The realm file registers the redirect
// URIs of a service on 127.0.0.1:18080; the stand-in and the container get
// them moved to a free port at start (the stand-in's --service-url, a
// rewritten copy of the file for the container). Only a Keycloak named by
// E2E_KEYCLOAK_URL, which imported the file as it is, needs 18080 free.
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
)

const (
	realmName    = "agents"
	clientID     = "agentauth"
	clientSecret = "agentauth-e2e-secret"
	// realmFilePort is the port of the service's redirect URIs in
	// deploy/keycloak/realm-agents.json.
	realmFilePort = 18080
)

var (
	binary  string // the built agentauth
	repo    string // repository root
	realKC  string // E2E_KEYCLOAK_URL: base URL of a real Keycloak, if any
	against string // what the suite runs against, for the log
	// realKCServicePort is the port of the redirect URIs the real Keycloak
	// registered.
	realKCServicePort = realmFilePort
)

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
	binary = filepath.Join(dir, "agentauth")
	build := exec.Command("go", "build", "-o", binary, "./cmd/agentauth")
	build.Dir, build.Stdout, build.Stderr = repo, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: build agentauth:", err)
		return 1
	}
	realKC = strings.TrimRight(os.Getenv("E2E_KEYCLOAK_URL"), "/")
	switch {
	case realKC != "":
		against = "a real Keycloak at " + realKC + " (E2E_KEYCLOAK_URL)"
	case containerEngine():
		realKCServicePort, err = freePortNow()
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		base, stop, err := startKeycloak(context.Background(), dir, realKCServicePort)
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		defer stop()
		realKC = base
		against = "the official Keycloak image " + keycloakImage + " (testcontainers-go) at " + base
	default:
		if err := npmCI(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: keycloak stand-in dependencies:", err)
			return 1
		}
		against = "the Keycloak stand-in (e2e/keycloak-standin, oidc-provider on Node) started from deploy/keycloak/realm-agents.json"
	}
	fmt.Fprintf(os.Stderr, "e2e: running against %s\n", against)
	code := m.Run()
	fmt.Fprintf(os.Stderr, "e2e: ran against %s\n", against)
	return code
}

// containerEngine reports whether a container engine daemon answers.
func containerEngine() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "docker", "info").Run() == nil
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

// needStandin skips a test that uses the stand-in's hooks (short token
// lifetimes, key rotation, stopping the provider) on a real Keycloak.
func needStandin(t *testing.T) {
	if realKC != "" {
		t.Skip("needs the stand-in's test hooks; running against a real Keycloak")
	}
}

// startIDP returns the shared provider: the real Keycloak, or a new
// stand-in on port (0: any free port) with the extra environment, whose
// redirect URIs name a free port.
func startIDP(t *testing.T, port int, env ...string) *idp {
	t.Helper()
	if realKC != "" {
		return &idp{base: realKC, issuer: realKC + "/realms/" + realmName, servicePort: realKCServicePort}
	}
	servicePort := freePort(t)
	dir := filepath.Join(repo, "e2e", "keycloak-standin")
	cmd := exec.Command("node", "server.mjs", "--realm-file", filepath.Join(repo, "deploy", "keycloak", "realm-agents.json"),
		"--port", fmt.Sprint(port), "--service-url", fmt.Sprintf("http://127.0.0.1:%d", servicePort))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	p := &idp{standin: true, servicePort: servicePort}
	p.proc = startProc(t, cmd, "standin")
	line := p.proc.waitLine(t, 30*time.Second, "listening on ")
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

// realmRoleGrant is a realm role given to a user of the stand-in through
// Keycloak's admin API (gocloak), which the test takes back with revoke.
type realmRoleGrant struct {
	userID string
	revoke func(t *testing.T)
}

func grantRealmRole(t *testing.T, p *idp, username, role string) realmRoleGrant {
	t.Helper()
	ctx := context.Background()
	kc := gocloak.NewClient(p.base)
	admin, err := kc.LoginAdmin(ctx, "admin", "admin", "master")
	if err != nil {
		t.Fatalf("admin login: %v", err)
	}
	users, err := kc.GetUsers(ctx, admin.AccessToken, realmName, gocloak.GetUsersParams{Username: gocloak.StringP(username), Exact: gocloak.BoolP(true)})
	if err != nil || len(users) != 1 {
		t.Fatalf("find %s: %v %v", username, users, err)
	}
	id := *users[0].ID
	r, err := kc.GetRealmRole(ctx, admin.AccessToken, realmName, role)
	if err != nil {
		t.Fatalf("role %s: %v", role, err)
	}
	if err := kc.AddRealmRoleToUser(ctx, admin.AccessToken, realmName, id, []gocloak.Role{*r}); err != nil {
		t.Fatalf("grant %s: %v", role, err)
	}
	return realmRoleGrant{userID: id, revoke: func(t *testing.T) {
		t.Helper()
		if err := kc.DeleteRealmRoleFromUser(ctx, admin.AccessToken, realmName, id, []gocloak.Role{*r}); err != nil {
			t.Fatalf("remove %s: %v", role, err)
		}
	}}
}
