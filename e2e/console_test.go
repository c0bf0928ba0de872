//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/notes"
)

// consoleAccount is one sign-in the browser tests make (see
// e2e/js/console/lib.mjs).
type consoleAccount struct {
	Role     string `json:"role"`
	SignIn   string `json:"signIn"` // key, password or provider
	Key      string `json:"key,omitempty"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
}

// TestConsole drives the web console in Chromium (playwright-core, with
// axe-core) in debug mode (the four roles by their debug keys), API-key
// mode (ADMIN by the key) and OIDC mode against the provider (ADMIN and
// AUDITOR through the code flow, USER and LEAD with the password form).
// Screenshots of every section are kept in e2e/js/console/artifacts/.
func TestConsole(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node not found (the console's browser tests run on Node): %v", err)
	}
	t.Run("Debug", func(t *testing.T) {
		url := startKeyService(t, "SERVICE_AUTH_DEBUG=true")
		var accounts []consoleAccount
		for _, role := range []string{"ADMIN", "USER", "LEAD", "AUDITOR"} {
			accounts = append(accounts, consoleAccount{Role: role, SignIn: "key", Key: "debug-" + lower(role)})
		}
		runConsoleTests(t, url, "debug", accounts)
	})
	t.Run("APIKey", func(t *testing.T) {
		var b [32]byte
		_, _ = rand.Read(b[:])
		key := hex.EncodeToString(b[:])
		// The sample MCP server behind its credential, for the server
		// set-up test (e2e/js/console/serversetup.test.mjs).
		_, _ = rand.Read(b[:])
		secret, creds := hex.EncodeToString(b[:]), t.TempDir()
		if err := os.WriteFile(filepath.Join(creds, "notes-token"), []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
		mcpServer := httptest.NewServer(notes.Handler(notes.NewStore(), secret))
		t.Cleanup(mcpServer.Close)
		url := startKeyService(t, "SERVICE_API_KEY="+key, "SERVICE_GATEWAY_CREDENTIALS_DIR="+creds)
		runConsoleTests(t, url, "apikey", []consoleAccount{{Role: "ADMIN", SignIn: "key", Key: key}},
			"CONSOLE_MCP_ENDPOINT="+mcpServer.URL, "CONSOLE_MCP_CREDENTIAL=notes-token")
	})
	t.Run("OIDC", func(t *testing.T) {
		p := keycloak(t)
		s := startService(t, p, p.servicePort)
		s.waitReady(t)
		runConsoleTests(t, s.url, "oidc", []consoleAccount{
			{Role: "ADMIN", SignIn: "provider", Username: "alice", Password: "alice-pw"},
			{Role: "USER", SignIn: "password", Username: "bob", Password: "bob-pw"},
			{Role: "LEAD", SignIn: "password", Username: "carol", Password: "carol-pw"},
			{Role: "AUDITOR", SignIn: "provider", Username: "dave", Password: "dave-pw"},
		})
	})
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// startKeyService runs agentauth on a free loopback port with env (debug
// or API-key mode) and returns its URL.
func startKeyService(t *testing.T, env ...string) string {
	t.Helper()
	return startAgentauth(t, "agentauth", append([]string{"SERVICE_AUDIT_CHECKPOINT_EVERY=20"}, env...)...).url
}

// runConsoleTests runs node --test on e2e/js/console against url.
func runConsoleTests(t *testing.T, url, mode string, accounts []consoleAccount, env ...string) {
	t.Helper()
	js := filepath.Join(repo, "e2e", "js")
	if _, err := os.Stat(filepath.Join(js, "node_modules", "playwright-core")); err != nil {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir, cmd.Stdout, cmd.Stderr = js, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("npm ci in e2e/js: %v", err)
		}
	}
	acc, err := json.Marshal(accounts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute) // bounds a hung browser, not a slow machine
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-concurrency=1", "--test-timeout=900000", "--test-reporter=spec", "console/")
	cmd.Dir = js
	// Node, its test processes and their Chromium are one process group,
	// ended together when the test ends or times out.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Env = append(os.Environ(), "CONSOLE_URL="+url, "CONSOLE_MODE="+mode, "CONSOLE_ACCOUNTS="+string(acc),
		"CONSOLE_ARTIFACTS="+filepath.Join(js, "console", "artifacts"))
	cmd.Env = append(cmd.Env, env...)
	// The spec reporter's lines go to the test's output as they come: a
	// browser test is slow enough that one wants to see where it is.
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the console's browser tests failed in %s mode: %v", mode, err)
	}
}
