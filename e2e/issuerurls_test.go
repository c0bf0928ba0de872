//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestIssuerURLs: the service reaches the provider at one URL
// (SERVICE_OIDC_DISCOVERY_URL, here Keycloak by the name localhost)
// while tokens carry another issuer (its 127.0.0.1 URL): discovery, keys
// and the token endpoint work through the discovery URL and tokens are
// checked against the configured issuer. Without the discovery URL, an
// issuer that is not what the provider's document says stops the start
// with a message naming both, and `agentauth oidc check` explains it.
func TestIssuerURLs(t *testing.T) {
	p := keycloak(t)
	internal := strings.Replace(p.issuer, "://127.0.0.1:", "://localhost:", 1)

	t.Run("split: logins and Bearer tokens through the discovery URL", func(t *testing.T) {
		s := startService(t, p, 0, "SERVICE_OIDC_DISCOVERY_URL="+internal)
		s.waitReady(t)
		status, jar, body := passwordLogin(t, s, "alice", "alice-pw")
		if status != http.StatusOK {
			t.Fatalf("password login: %d %s", status, body)
		}
		if st, m := whoami(t, noRedirects(jar), s, ""); st != http.StatusOK || m.Subject == "" {
			t.Errorf("cookie: %d %+v", st, m)
		}
		tok := grant(t, p, realmName, clientID, clientSecret, "bob", "bob-pw")
		if st, _ := whoami(t, noRedirects(nil), s, tok.AccessToken); st != http.StatusOK {
			t.Errorf("Bearer token carrying the issuer: %d, want 200", st)
		}
	})

	baseEnv := func() []string {
		return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
			"SERVICE_OIDC_ENABLED=true", "SERVICE_OIDC_CLIENT_ID=" + clientID, "SERVICE_OIDC_CLIENT_SECRET=" + clientSecret,
			"SERVICE_OIDC_REDIRECT_URI=" + p.redirectURI()}
	}

	t.Run("mismatch without the split setting stops the start naming both", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, binary, "serve")
		cmd.Env = append(baseEnv(), "SERVICE_OIDC_ISSUER="+internal,
			"SERVICE_PORT="+fmt.Sprint(freePort(t)), "SERVICE_MANAGEMENT_PORT="+fmt.Sprint(freePort(t)), "SERVICE_DATA_DIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 || ctx.Err() != nil {
			t.Fatalf("serve with a mismatched issuer: %v (want a non-zero exit at start)\n%s", err, out)
		}
		for _, want := range []string{internal, p.issuer, "SERVICE_OIDC_DISCOVERY_URL"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("start error does not name %q:\n%s", want, out)
			}
		}
	})

	for _, tc := range []struct {
		name     string
		env      []string
		wantExit int
		want     []string
	}{
		{"oidc check explains a mismatch", []string{"SERVICE_OIDC_ISSUER=" + internal}, 1,
			[]string{"FAIL  issuer: the provider says " + fmt.Sprintf("%q", p.issuer), "SERVICE_OIDC_DISCOVERY_URL"}},
		{"oidc check with the split setting", []string{"SERVICE_OIDC_ISSUER=" + p.issuer, "SERVICE_OIDC_DISCOVERY_URL=" + internal}, 0,
			[]string{"discovery URL " + internal, "the service calls the provider at " + internal, "ok    client credentials"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(binary, "oidc", "check")
			cmd.Env = append(baseEnv(), tc.env...)
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantExit {
				t.Errorf("exit %d, want %d\n%s", code, tc.wantExit, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
