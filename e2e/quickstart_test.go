//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestQuickstartOIDC runs the documented OIDC quick starts as a newcomer
// would: go tool task quickstart:oidc (the stand-in) and
// quickstart:keycloak (the real Keycloak), here on free ports. Each reads
// the URL and alice's password from what the command prints, signs in with
// them by POST /auth/login and in Chromium at the printed URL (the
// provider's own login page), and stops the command with SIGTERM, which
// ends agentauth and the provider.
func TestQuickstartOIDC(t *testing.T) {
	if err := npmCI(); err != nil {
		t.Fatal(err)
	}
	t.Run("stand-in", func(t *testing.T) { testQuickstartOIDC(t, "oidc") })
	t.Run("keycloak", func(t *testing.T) {
		keycloak(t) // the suite's start prepared the cache; this one starts a second Keycloak
		testQuickstartOIDC(t, "keycloak")
	})
}

func testQuickstartOIDC(t *testing.T, command string) {
	bin := filepath.Join(t.TempDir(), "quickstart")
	build := exec.Command("go", "build", "-o", bin, "./cmd/quickstart")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/quickstart: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, command, "-port", "0", "-idp-port", "0")
	cmd.Dir = repo
	cmd.Stderr = logFile(t, "quickstart-stderr")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})

	printed := make(chan string, 1)
	go func() {
		var out strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "Ctrl-C stops both") {
				printed <- out.String()
			}
		}
		exited <- cmd.Wait()
	}()
	var text string
	select {
	case text = <-printed:
	case err := <-exited:
		t.Fatalf("the quick start exited before it was ready: %v", err)
	case <-time.After(10 * time.Minute): // a bound for a hang: Keycloak alone took 2m38 to start at load 28
		t.Fatal("the quick start printed no sign-in details within 10 minutes")
	}
	t.Logf("printed:\n%s", text)

	signIn := regexp.MustCompile(`Sign in \(browser\):\s+(http://127\.0\.0\.1:\d+)/auth/login`).FindStringSubmatch(text)
	alice := regexp.MustCompile(`(?m)^\s+alice\s+(\S+)\s+ADMIN\s+([0-9a-f-]{36})$`).FindStringSubmatch(text)
	issuer := regexp.MustCompile(`Identity provider:\s+(http://\S+)`).FindStringSubmatch(text)
	if signIn == nil || alice == nil || issuer == nil {
		t.Fatalf("the printed text lacks the sign-in URL, alice's password, role and subject, or the provider:\n%s", text)
	}
	base, password, subject := signIn[1], alice[1], alice[2]

	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	body, _ := json.Marshal(map[string]string{"username": "alice", "password": password})
	res, err := client.Post(base+"/auth/login", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	var login struct {
		Subject string   `json:"subject"`
		Roles   []string `json:"roles"`
	}
	err = json.NewDecoder(res.Body).Decode(&login)
	res.Body.Close()
	if res.StatusCode != 200 || err != nil || login.Subject != subject || len(login.Roles) != 1 || login.Roles[0] != "ADMIN" {
		t.Fatalf("POST /auth/login with the printed password: %d %+v %v; want 200, ADMIN, subject %s", res.StatusCode, login, err, subject)
	}
	res, err = client.Get(base + "/api/v2/me")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("GET /api/v2/me with the session cookie: got %d, want 200", res.StatusCode)
	}

	// The printed sign-in URL in a browser: the provider's login page, back
	// to agentauth signed in as ADMIN.
	t.Run("browser", func(t *testing.T) { testCodeFlow(t, &service{url: base}) })

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the quick start after SIGTERM: %v, want exit code 0", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the quick start did not stop within a minute of SIGTERM")
	}
	for _, u := range []string{base + "/health", issuer[1] + "/.well-known/openid-configuration"} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
		res, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			res.Body.Close()
			t.Errorf("GET %s after the quick start stopped: %d, want no answer", u, res.StatusCode)
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("GET %s after the quick start stopped: %v, want connection refused", u, err)
		}
	}
}
