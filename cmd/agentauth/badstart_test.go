package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
)

// TestEveryBadStartExitsTwoWithPlainLines: whatever stops the start (a
// setting, a misspelt variable, the key file, the database, a port) is told
// the way configuration problems are: "agentauth: …:" and one plain line
// per problem ("  - "), naming the setting, and exit code 2.
func TestEveryBadStartExitsTwoWithPlainLines(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := fmt.Sprint(taken.Addr().(*net.TCPAddr).Port)

	pg := pgtest.URL(t)
	noSchema := strings.Replace(pg, "search_path=", "search_path=no_such_schema_", 1)
	pgKeys := []string{pgAuditKey, pgAgentKey, "SERVICE_API_KEY=" + strings.Repeat("k", 32)}

	tests := []struct {
		name  string
		env   []string
		setup func(t *testing.T, dataDir string)
		want  []string
	}{
		{"a setting's value", []string{"SERVICE_PORT=eighty"}, nil,
			[]string{`SERVICE_PORT="eighty" is not valid`}},
		{"a letter missing in a variable", []string{"SERVICE_OIDC_ENABLE=true"}, nil,
			[]string{"SERVICE_OIDC_ENABLE is not a setting of agentauth; did you mean SERVICE_OIDC_ENABLED (auth.oidc.enabled)?"}},
		{"an underscore missing in a variable", []string{"SERVICE_APIKEY=0123456789abcdef0123"}, nil,
			[]string{"SERVICE_APIKEY is not a setting of agentauth; did you mean SERVICE_API_KEY?"}},
		{"a key file others may read", nil, func(t *testing.T, dir string) {
			writeSecret(t, filepath.Join(dir, "secrets", "api-key"), strings.Repeat("k", 43), 0o644)
		}, []string{"has mode 0644", "chmod 600", "dataDir / SERVICE_DATA_DIR"}},
		{"the audit signing key others may read", nil, func(t *testing.T, dir string) {
			writeSecret(t, filepath.Join(dir, "secrets", "audit-signing.key"), "cGctYXVkaXQtc2lnbmluZy1rZXktMDEyMzQ1Njc4OWE", 0o644)
		}, []string{"has mode 0644", "chmod 600", "dataDir / SERVICE_DATA_DIR", "audit.signingKeyFile / SERVICE_AUDIT_SIGNING_KEY_FILE"}},
		{"the agent-token key others may read", nil, func(t *testing.T, dir string) {
			writeSecret(t, filepath.Join(dir, "secrets", "agent-token-signing.key"), "cGctYWdlbnQtdG9rZW4tc2lnbmluZy1rZXktMDEyMzQ", 0o644)
		}, []string{"has mode 0644", "chmod 600", "dataDir / SERVICE_DATA_DIR", "auth.agentTokens.signingKeyFile / SERVICE_AGENT_TOKENS_SIGNING_KEY_FILE"}},
		{"the data folder another process serves", nil, func(t *testing.T, dir string) {
			start(t, baseEnv(dir), "serve")
		}, []string{"dataDir / SERVICE_DATA_DIR", "in use by another", "one data folder serves one process"}},
		{"a configured key file missing", []string{"SERVICE_API_KEY_FILE=/nonexistent/api-key"}, nil,
			[]string{"auth.apiKeyFile / SERVICE_API_KEY_FILE / --api-key-file: cannot read /nonexistent/api-key"}},
		{"the data folder a file", []string{"SERVICE_DATA_DIR=/etc/hostname"}, nil,
			[]string{"dataDir / SERVICE_DATA_DIR / --data-dir"}},
		{"the API port taken", []string{"SERVICE_PORT=" + takenPort}, nil,
			[]string{"SERVICE_PORT", "127.0.0.1:" + takenPort, "address already in use"}},
		{"the management port taken", []string{"SERVICE_MANAGEMENT_PORT=" + takenPort}, nil,
			[]string{"SERVICE_MANAGEMENT_PORT", "address already in use"}},
		{"an address not of this machine", []string{"SERVICE_HOST=192.0.2.1"}, nil,
			[]string{"SERVICE_HOST", "192.0.2.1"}},
		{"PostgreSQL not listening", append([]string{"SERVICE_DATABASE_URL=postgres://agentauth@127.0.0.1:1/agentauth"}, pgKeys...), nil,
			[]string{"database.url / SERVICE_DATABASE_URL", "127.0.0.1:1", "connection refused"}},
		{"a schema missing from search_path", append([]string{"SERVICE_DATABASE_URL=" + noSchema}, pgKeys...), nil,
			[]string{"database.url / SERVICE_DATABASE_URL", "search_path", "no_such_schema_", "CREATE SCHEMA"}},
		{"a schema the user may not use", append([]string{"SERVICE_DATABASE_URL=" + asNewRole(t, pg, "")}, pgKeys...), nil,
			[]string{"database.url / SERVICE_DATABASE_URL", "search_path", "GRANT USAGE, CREATE ON SCHEMA"}},
		{"a schema the user may not create tables in", append([]string{"SERVICE_DATABASE_URL=" + asNewRole(t, pg, "USAGE")}, pgKeys...), nil,
			[]string{"database.url / SERVICE_DATABASE_URL", "may not create tables in the schema", "GRANT CREATE ON SCHEMA"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			code, out := runToEnd(t, baseEnv(dir, tt.env...), "serve")
			if code != exitUsage {
				t.Errorf("exit: got %d, want %d\n%s", code, exitUsage, out)
			}
			var problems []string
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, "  - ") {
					problems = append(problems, line)
				}
			}
			for _, w := range tt.want {
				found := false
				for _, p := range problems {
					found = found || strings.Contains(p, w)
				}
				if !found {
					t.Errorf("no plain problem line (\"  - …\") says %q:\n%s", w, out)
				}
			}
			if !strings.Contains(out, "agentauth: ") {
				t.Errorf("output does not begin the problems with \"agentauth: \":\n%s", out)
			}
		})
	}
}

// asNewRole returns pgURL for a new login role (dropped after the test)
// holding grant (USAGE, or nothing when empty) on the URL's schema.
func asNewRole(t *testing.T, pgURL, grant string) string {
	t.Helper()
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	var b [4]byte
	_, _ = rand.Read(b[:])
	role := "agentauth_test_role_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, pgURL)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP OWNED BY "+role+"; DROP ROLE "+role); err != nil {
			t.Errorf("drop role %s: %v", role, err)
		}
	})
	if grant != "" {
		if _, err := conn.Exec(ctx, "GRANT "+grant+" ON SCHEMA "+schema+" TO "+role); err != nil {
			t.Fatal(err)
		}
	}
	u.User = url.User(role)
	return u.String()
}

func writeSecret(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// TestVariablesOfOtherToolsOnlyWarn: a SERVICE_* variable far from every
// setting and a Kubernetes service link do not stop the start; the first
// is named in the log with the nearest setting, the link not at all.
func TestVariablesOfOtherToolsOnlyWarn(t *testing.T) {
	p := start(t, baseEnv(t.TempDir(), "SERVICE_NAME=billing", "SERVICE_SERVICE_HOST=10.96.0.12", "SERVICE_PORT_80_TCP=tcp://10.96.0.12:80"), "serve")
	if code := stop(t, p); code != exitOK {
		t.Fatalf("exit %d\n%s", code, p.Stderr())
	}
	logs := p.Stderr()
	if want := "SERVICE_NAME is not a setting of agentauth and is ignored; the nearest setting is"; !strings.Contains(logs, want) {
		t.Errorf("the log does not say %q:\n%s", want, logs)
	}
	if strings.Contains(logs, "SERVICE_SERVICE_HOST") || strings.Contains(logs, "SERVICE_PORT_80_TCP") {
		t.Errorf("the log names a service link:\n%s", logs)
	}
}
