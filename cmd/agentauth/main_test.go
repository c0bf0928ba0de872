package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/launch"
)

// binary is the agentauth command built once for these process tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentauth-bin")
	if err != nil {
		panic(err)
	}
	binary, err = launch.Build(context.Background(), "../..", dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// pgAuditKey and pgAgentKey are the signing keys PostgreSQL mode needs
// configured (every instance on a database shares them).
const (
	pgAuditKey = "SERVICE_AUDIT_SIGNING_KEY=cGctYXVkaXQtc2lnbmluZy1rZXktMDEyMzQ1Njc4OWE"
	pgAgentKey = "SERVICE_AGENT_TOKENS_SIGNING_KEY=cGctYWdlbnQtdG9rZW4tc2lnbmluZy1rZXktMDEyMzQ"
)

// baseEnv isolates a process: its own data folder, a free port, and none of
// the caller's SERVICE_* settings.
func baseEnv(dataDir string, extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dataDir, "SERVICE_DATA_DIR=" + dataDir, "SERVICE_PORT=0"}
	return append(env, extra...)
}

// start runs agentauth and waits until it listens; the test ends it.
func start(t *testing.T, env []string, args ...string) *launch.Process {
	t.Helper()
	p, err := launch.Start(binary, env, 20*time.Second, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// stop sends SIGTERM and returns the exit code.
func stop(t *testing.T, p *launch.Process) int {
	t.Helper()
	code, err := p.Stop(30 * time.Second)
	if err != nil {
		t.Fatalf("%v\n%s", err, p.Stderr())
	}
	return code
}

// runToEnd runs agentauth expecting it to exit by itself.
func runToEnd(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

func get(t *testing.T, url, key string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

type me struct {
	Subject string   `json:"subject"`
	Roles   []string `json:"roles"`
	Method  string   `json:"method"`
}

func whoami(t *testing.T, url, key string) (int, me) {
	t.Helper()
	status, _, body := get(t, url+"/api/v2/me", key)
	var m me
	if status == 200 {
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
	}
	return status, m
}

func TestLocalModeCreatesAndReusesTheKeyFile(t *testing.T) {
	dir := t.TempDir()
	p := start(t, baseEnv(dir), "serve")
	keyFile := filepath.Join(dir, "secrets", "api-key")
	key := readKey(t, keyFile)
	for path, want := range map[string]os.FileMode{keyFile: 0o600, filepath.Dir(keyFile): 0o700, filepath.Join(dir, "agentauth.db"): 0o600} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s has mode %04o, want %04o", path, got, want)
		}
	}
	if len(key) < 43 {
		t.Errorf("key has %d characters, want 256 bits (43 base64url characters)", len(key))
	}
	if status, m := whoami(t, p.URL, key); status != 200 || m.Method != "local" || len(m.Roles) != 1 || m.Roles[0] != "ADMIN" {
		t.Errorf("whoami = %d %+v, want 200 ADMIN by local key", status, m)
	}
	if code := stop(t, p); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	logs := p.Stderr()
	if !strings.Contains(logs, keyFile) || strings.Contains(logs, key) {
		t.Errorf("the log must name the key file and never the key:\n%s", logs)
	}

	p = start(t, baseEnv(dir), "serve")
	if again := readKey(t, keyFile); again != key {
		t.Errorf("key changed on restart")
	}
	if status, _ := whoami(t, p.URL, key); status != 200 {
		t.Errorf("reused key: status %d, want 200", status)
	}
	stop(t, p)

	if err := os.Chmod(keyFile, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runToEnd(t, baseEnv(dir), "serve")
	if code == 0 || !strings.Contains(out, "chmod 600") {
		t.Errorf("a world-readable key file must stop the start: exit %d\n%s", code, out)
	}
}

func readKey(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestAPIKeyModeFromEnvironmentAndFlag(t *testing.T) {
	const envKey, flagKey = "env-key-0123456789abcdef", "flag-key-0123456789abcdef"
	tests := []struct {
		name          string
		env           []string
		args          []string
		accept, other string
	}{
		{"environment", []string{"SERVICE_API_KEY=" + envKey}, nil, envKey, flagKey},
		{"flag", nil, []string{"--api-key", flagKey}, flagKey, envKey},
		{"flag beats environment", []string{"SERVICE_API_KEY=" + envKey}, []string{"--api-key", flagKey}, flagKey, envKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := start(t, baseEnv(dir, tt.env...), append([]string{"serve"}, tt.args...)...)
			if status, m := whoami(t, p.URL, tt.accept); status != 200 || m.Method != "api_key" || m.Roles[0] != "ADMIN" {
				t.Errorf("accepted key: %d %+v, want 200 ADMIN by api_key", status, m)
			}
			if status, _ := whoami(t, p.URL, tt.other); status != 401 {
				t.Errorf("other key: status %d, want 401", status)
			}
			if status, _, _ := get(t, p.URL+"/api/v2/sessions", tt.accept); status != 200 {
				t.Errorf("GET /api/v2/sessions = %d, want 200", status)
			}
			if _, err := os.Stat(filepath.Join(dir, "secrets", "api-key")); err == nil {
				t.Error("API-key mode must not create a local key file")
			}
			if code := stop(t, p); code != 0 {
				t.Errorf("exit %d", code)
			}
		})
	}
}

func TestDebugMode(t *testing.T) {
	p := start(t, baseEnv(t.TempDir(), "SERVICE_AUTH_DEBUG=true"), "serve")
	for _, role := range []string{"admin", "user", "lead", "auditor"} {
		status, m := whoami(t, p.URL, "debug-"+role)
		if status != 200 || m.Method != "debug" || len(m.Roles) != 1 || m.Roles[0] != strings.ToUpper(role) {
			t.Errorf("debug-%s: %d %+v", role, status, m)
		}
	}
	if _, h, _ := get(t, p.URL+"/health", ""); h.Get("X-Auth-Debug") != "true" {
		t.Error("debug responses must carry X-Auth-Debug: true")
	}
	if status, _ := whoami(t, p.URL, "debug-root"); status != 401 {
		t.Errorf("unknown debug key: %d, want 401", status)
	}
	stop(t, p)
	if !strings.Contains(p.Stderr(), "DEBUG MODE") {
		t.Error("debug mode must warn loudly at startup")
	}
}

func TestBadConfigurationStopsTheStart(t *testing.T) {
	dir := t.TempDir()
	badFile := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badFile, []byte("server:\n  hots: 0.0.0.0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"debug on a public address", []string{"SERVICE_AUTH_DEBUG=true", "SERVICE_HOST=0.0.0.0"}, nil, []string{"SERVICE_AUTH_DEBUG", "loopback"}},
		{"debug via flag host", []string{"SERVICE_AUTH_DEBUG=true"}, []string{"--host", "192.0.2.1"}, []string{"loopback", "192.0.2.1"}},
		{"port not a number", []string{"SERVICE_PORT=eighty"}, nil, []string{"SERVICE_PORT", "eighty"}},
		{"misspelt key in the file", nil, []string{"--config", badFile}, []string{"hots"}},
		{"config from environment", []string{"SERVICE_CONFIG=" + badFile}, nil, []string{"hots"}},
		{"short API key", []string{"SERVICE_API_KEY=short"}, nil, []string{"SERVICE_API_KEY"}},
		{"two problems at once", []string{"SERVICE_LOG_LEVEL=loud", "SERVICE_PORT=99999"}, nil, []string{"SERVICE_LOG_LEVEL", "SERVICE_PORT"}},
		{"trusted proxy not a CIDR", []string{"SERVICE_TRUSTED_PROXIES=10.0.0.0/8,lb.internal"}, nil, []string{"SERVICE_TRUSTED_PROXIES", "lb.internal"}},
		{"trusted proxy flag beats environment", []string{"SERVICE_TRUSTED_PROXIES=10.0.0.0/8"}, []string{"--trusted-proxies", "0.0.0.0/0"}, []string{"--trusted-proxies", "trusts every address"}},
		// Before any connection: each instance would sign agent tokens with a key of its own.
		{"PostgreSQL without the agent-token key", []string{"SERVICE_API_KEY=" + strings.Repeat("k", 32),
			"SERVICE_DATABASE_URL=postgres://agentauth@127.0.0.1:1/agentauth", pgAuditKey}, nil,
			[]string{"auth.agentTokens.signingKeyFile / SERVICE_AGENT_TOKENS_SIGNING_KEY_FILE / --agent-tokens-signing-key-file (or SERVICE_AGENT_TOKENS_SIGNING_KEY): required with database.url"}},
		{"stray argument", nil, []string{"now"}, []string{"no arguments"}},
		{"unknown flag", nil, []string{"--colour"}, []string{"colour"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := runToEnd(t, baseEnv(dir, tt.env...), append([]string{"serve"}, tt.args...)...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d\n%s", code, exitUsage, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not name %q:\n%s", w, out)
				}
			}
		})
	}
	if code, _ := runToEnd(t, baseEnv(dir), "fly"); code != exitUsage {
		t.Errorf("unknown command: exit %d, want %d", code, exitUsage)
	}
}

// TestPrecedenceFileEnvFlag: the data folder comes from the flag over the
// environment over the file, seen by where the key file is created.
func TestPrecedenceFileEnvFlag(t *testing.T) {
	root := t.TempDir()
	fileDir, envDir, flagDir := filepath.Join(root, "file"), filepath.Join(root, "env"), filepath.Join(root, "flag")
	cfg := filepath.Join(root, "agentauth.yaml")
	if err := os.WriteFile(cfg, []byte("dataDir: "+fileDir+"\nserver:\n  port: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root}
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"file", env, []string{"--config", cfg}, fileDir},
		{"environment beats file", append(env, "SERVICE_DATA_DIR="+envDir), []string{"--config", cfg}, envDir},
		{"flag beats environment", append(env, "SERVICE_DATA_DIR="+envDir), []string{"--config", cfg, "--data-dir", flagDir}, flagDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, tt.env, append([]string{"serve"}, tt.args...)...)
			stop(t, p)
			if _, err := os.Stat(filepath.Join(tt.want, "secrets", "api-key")); err != nil {
				t.Errorf("key file not in %s: %v", tt.want, err)
			}
		})
	}
}

// auditRecords opens the data folder (after the process is gone) as the
// service does at start, the audit log bringing its index up to date, and
// returns every audit record, checking the hash chain on the way.
func auditRecords(t *testing.T, dir string) map[string]domain.AuditRecord {
	t.Helper()
	store, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(dir, "agentauth.db")), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	log, closeLog, err := auditlog.OpenDurable(filepath.Join(dir, "audit"), store, auditlog.Retention{}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer closeLog()
	recs, err := log.AuditChain(context.Background(), 0, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if br := domain.VerifyChain(domain.GenesisHash, recs); br != nil {
		t.Errorf("audit chain broken: %+v", br)
	}
	byID := map[string]domain.AuditRecord{}
	for _, r := range recs {
		byID[r.RequestID] = r
	}
	return byID
}

// load sends authenticated GET /api/v2/sessions from several clients until
// halt is closed, and returns the request ids of every response received.
func load(t *testing.T, url, key string, workers int, halt <-chan struct{}) []string {
	var ids []string
	for _, a := range loadOf(t, "GET", url+"/api/v2/sessions", "", key, workers, halt) {
		ids = append(ids, a.requestID)
	}
	return ids
}

// answer is one response of loadOf.
type answer struct {
	requestID string
	status    int
	body      []byte
}

// loadOf sends the request from several clients until halt is closed, and
// returns every response received that has a request id.
func loadOf(t *testing.T, method, url, body, key string, workers int, halt <-chan struct{}) []answer {
	t.Helper()
	var (
		mu  sync.Mutex
		ids []answer
		wg  sync.WaitGroup
	)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}, Timeout: 10 * time.Second}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 100000; n++ { // bounded, whatever happens
				select {
				case <-halt:
					return
				default:
				}
				req, _ := http.NewRequest(method, url, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				res, err := client.Do(req)
				if err != nil {
					continue // the server is gone; the loop ends on stop
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if id := res.Header.Get("X-Request-ID"); id != "" {
					mu.Lock()
					ids = append(ids, answer{id, res.StatusCode, b})
					mu.Unlock()
				}
			}
		}()
	}
	<-halt
	wg.Wait()
	return ids
}

func TestKill9LosesNoAnsweredRequestsAuditRecord(t *testing.T) {
	dir := t.TempDir()
	ids := loadAndKill(t, dir)
	records := auditRecords(t, dir)
	missing := 0
	for _, id := range ids {
		if r, ok := records[id]; !ok || r.Status != 200 || r.Decision != domain.AuditAllow {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d answered requests have no audit record after kill -9", missing, len(ids))
	}
	t.Logf("%d answered requests before kill -9, all audited (%d records)", len(ids), len(records))
}

// The audit log alone is the durable copy in SQLite mode: with the SQLite
// index emptied after kill -9, the restart rebuilds every answered
// request's record from the log, and the chain verifies.
func TestKill9EveryAnsweredRequestIsInTheAuditLogAlone(t *testing.T) {
	dir := t.TempDir()
	ids := loadAndKill(t, dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "agentauth.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM audit`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	records := auditRecords(t, dir)
	missing := 0
	for _, id := range ids {
		if _, ok := records[id]; !ok {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d answered requests are not in the audit log after kill -9", missing, len(ids))
	}
	t.Logf("%d answered requests before kill -9, all in the log (%d records)", len(ids), len(records))
}

// loadAndKill serves with an API key in dir, loads it from 16 clients and
// kills it (SIGKILL) after 1,500 audit records; it returns the request ids
// of every response received.
func loadAndKill(t *testing.T, dir string) []string {
	t.Helper()
	const key = "kill-nine-key-0123456789"
	p := start(t, baseEnv(dir, "SERVICE_API_KEY="+key), "serve")
	halt := make(chan struct{})
	result := make(chan []string, 1)
	go func() { result <- load(t, p.URL, key, 16, halt) }()
	// Kill once a good number of responses were answered, without timing.
	waitForRecords(t, p.URL, key, 1500)
	p.Kill()
	close(halt)
	ids := <-result
	if len(ids) < 100 {
		t.Fatalf("only %d responses before the kill", len(ids))
	}
	return ids
}

// waitForRecords returns once the running server's audit log holds more
// than n records (or after a bounded number of looks): watching the count
// through the API rather than the clock keeps load tests free of timing.
func waitForRecords(t *testing.T, url, key string, n int64) {
	t.Helper()
	for i := 0; i < 2000; i++ {
		_, _, body := get(t, url+"/api/v2/audit?limit=1", key)
		var page struct{ Records []struct{ Seq int64 } }
		if json.Unmarshal(body, &page) == nil && len(page.Records) == 1 && page.Records[0].Seq > n {
			return
		}
	}
}

func TestSIGTERMFinishesAndExitsZero(t *testing.T) {
	dir := t.TempDir()
	const key = "sigterm-key-0123456789ab"
	p := start(t, baseEnv(dir, "SERVICE_API_KEY="+key), "serve")
	halt := make(chan struct{})
	result := make(chan []string, 1)
	go func() { result <- load(t, p.URL, key, 8, halt) }()
	for i := 0; i < 200; i++ {
		get(t, p.URL+"/health", "")
	}
	code := stop(t, p)
	close(halt)
	ids := <-result
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0\n%s", code, p.Stderr())
	}
	records := auditRecords(t, dir)
	for _, id := range ids {
		if _, ok := records[id]; !ok {
			t.Errorf("answered request %s has no audit record", id)
		}
	}
	if !strings.Contains(p.Stderr(), "stopped cleanly") {
		t.Errorf("no clean-stop line in the log:\n%s", p.Stderr())
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out := runToEnd(t, baseEnv(t.TempDir()), args...)
		if code != 0 || !strings.HasPrefix(out, "agentauth ") || !strings.Contains(out, "revision ") || !strings.Contains(out, "go1.") {
			t.Errorf("agentauth %s: exit %d %q, want 0 and \"agentauth <version> (revision <rev>, go…)\"", args[0], code, out)
		}
	}
}

// TestDataFolderIsTightenedTo0700: a data folder that already exists with
// a mode others can read (0755, as mkdir leaves it) is restricted to its
// owner at start, and the log says so: it holds the database and the key.
func TestDataFolderIsTightenedTo0700(t *testing.T) {
	for _, mode := range []os.FileMode{0o755, 0o750, 0o777} {
		t.Run(fmt.Sprintf("%04o", mode), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, mode); err != nil {
				t.Fatal(err)
			}
			p := start(t, baseEnv(dir), "serve")
			stop(t, p)
			info, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := info.Mode().Perm(); got != 0o700 {
				t.Errorf("data folder mode %04o, want 0700", got)
			}
			if logs := p.Stderr(); !strings.Contains(logs, "restricted the data folder to its owner") || !strings.Contains(logs, dir) {
				t.Errorf("the log does not say the folder was tightened:\n%s", logs)
			}
		})
	}
}

// TestUsageListsEveryCommand: the top-level usage names every command the
// binary runs, each sub-command included.
func TestUsageListsEveryCommand(t *testing.T) {
	for _, cmd := range []string{"serve", "policy can", "oidc check", "audit verify", "audit public-key", "version"} {
		if !strings.Contains(usage, "agentauth "+cmd+" ") {
			t.Errorf("the usage does not name `agentauth %s`:\n%s", cmd, usage)
		}
	}
}
