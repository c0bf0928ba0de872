package main

// Fault tests of "no change without its record": the service is killed, its
// database is killed, its disk fills up, all under concurrent
// POST /api/v2/sessions, and afterwards every session row must be accounted
// for by exactly one audit record: the request's own (allow, 201) or one
// written by recovery (domain.RecoveredRecord).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/adapters/store/postgres"
	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"

	"github.com/agentauth/agentauth/internal/testwait"
)

const faultKey = "fault-test-key-0123456789"

// faultStore is where the tests read the outcome from.
type faultStore struct {
	sessions ports.SessionStore
	audit    interface {
		AuditChain(ctx context.Context, after int64, limit int) ([]domain.AuditRecord, error)
	}
	intents interface {
		PendingIntents(ctx context.Context) (int, error)
	}
}

// ledger is what a store holds after a fault.
type ledger struct {
	sessions  int // rows in the sessions table
	created   int // records of POST /api/v2/sessions answered 201
	recovered int // records written by recovery for a session creation
	pending   int // intents not (yet) settled by a record
	records   int
}

func (l ledger) String() string {
	return fmt.Sprintf("%d session rows, %d audited creations (%d answered 201 + %d recovered), %d pending intents, %d records",
		l.sessions, l.created+l.recovered, l.created, l.recovered, l.pending, l.records)
}

// account reads the ledger, checking that the chain verifies and that no
// request has two records.
func account(t *testing.T, st faultStore) ledger {
	t.Helper()
	ctx := context.Background()
	sessions, err := st.sessions.ListSessions(ctx, ports.SessionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := st.audit.AuditChain(ctx, 0, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if breaks := domain.VerifyChain(domain.GenesisHash, recs); len(breaks) > 0 {
		t.Errorf("audit chain broken: %+v", breaks)
	}
	l := ledger{sessions: len(sessions), records: len(recs)}
	seen := map[string]domain.AuditRecord{}
	for _, r := range recs {
		if first, dup := seen[r.RequestID]; dup {
			t.Errorf("request %s has two audit records: %d %s %d %q and %d %s %d %q", r.RequestID, first.Seq, first.Decision, first.Status, first.Reason, r.Seq, r.Decision, r.Status, r.Reason)
		}
		seen[r.RequestID] = r
		switch {
		case strings.HasPrefix(r.Reason, domain.RecoveredPrefix+"create session "):
			l.recovered++
		case r.Method == "POST" && r.Path == "/api/v2/sessions" && r.Status == 201 && r.Decision == domain.AuditAllow:
			l.created++
		}
	}
	if l.pending, err = st.intents.PendingIntents(ctx); err != nil {
		t.Fatal(err)
	}
	return l
}

// settled checks the guarantee: every row has exactly one record, nothing
// is left pending.
func settled(t *testing.T, l ledger) {
	t.Helper()
	if l.sessions != l.created+l.recovered || l.pending != 0 {
		t.Errorf("%v: want every session row audited once and no pending intent", l)
	}
	t.Log(l)
}

// createSessions runs concurrent POST /api/v2/sessions against url until
// halt is closed; the result channel gets the responses.
func createSessions(t *testing.T, url string, halt <-chan struct{}) <-chan []answer {
	out := make(chan []answer, 1)
	go func() {
		out <- loadOf(t, "POST", url+"/api/v2/sessions", `{"title":"fault","mode":"ask"}`, faultKey, 16, halt)
	}()
	return out
}

// openSQLiteIndex opens the data folder's database, which a running
// service may be using, and reads its audit log beside it: the records up
// to the index's head, since the index may lag behind the log by the
// records whose intents are still pending.
func openSQLiteIndex(t *testing.T, dir string) faultStore {
	t.Helper()
	st, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(dir, "agentauth.db")), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeStore)
	return faultStore{sessions: st, audit: indexedLog{dir: filepath.Join(dir, "audit"), index: st}, intents: sessionIntents{st}}
}

// sessionIntents counts the pending intents of session creations only: a
// subject's first session also records its roles (an owner record), which
// is no session row.
type sessionIntents struct{ st *sqlite.Store }

func (s sessionIntents) PendingIntents(ctx context.Context) (int, error) {
	changes, err := s.st.PendingChanges(ctx, time.Now().Add(time.Hour))
	n := 0
	for _, c := range changes {
		if strings.HasPrefix(c.Change, "create session ") {
			n++
		}
	}
	return n, err
}

// indexedLog reads the records the index holds from the audit log in dir,
// which a running service keeps open.
type indexedLog struct {
	dir   string
	index *sqlite.Store
}

func (l indexedLog) AuditChain(ctx context.Context, after int64, limit int) ([]domain.AuditRecord, error) {
	head, _, err := l.index.AuditIndexHead(ctx)
	if err != nil {
		return nil, err
	}
	var out []domain.AuditRecord
	stop := errors.New("at the index head")
	err = auditlog.ReadLog(l.dir, after+1, func(r domain.AuditRecord) error {
		if r.Seq > head || len(out) == limit {
			return stop
		}
		out = append(out, r)
		return nil
	})
	if errors.Is(err, stop) {
		err = nil
	}
	return out, err
}

// openSQLite opens the data folder of a stopped service, with its audit
// log (which indexes whatever the index lacks).
func openSQLite(t *testing.T, dir string) faultStore {
	t.Helper()
	st := openSQLiteIndex(t, dir)
	log, closeLog, err := auditlog.OpenDurable(filepath.Join(dir, "audit"), st.sessions.(*sqlite.Store), auditlog.Retention{}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeLog)
	st.audit = log
	return st
}

func openPostgres(t *testing.T, url string) faultStore {
	t.Helper()
	st, closeStore, err := postgres.Open(context.Background(), postgres.URL(url), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeStore)
	return faultStore{sessions: st, audit: st, intents: st}
}

// awaitSettled waits (boundedly) until recovery has left no pending intent.
func awaitSettled(t *testing.T, st faultStore) {
	t.Helper()
	testwait.Until(t, time.Minute, "recovery settles every pending intent", func() (bool, string) {
		n, err := st.intents.PendingIntents(context.Background())
		return err == nil && n == 0, fmt.Sprint(n, " pending, ", err)
	})
}

// TestKill9UnderWriteLoadLeavesNoChangeUnaudited kills the service with
// SIGKILL while 16 clients create sessions, restarts it, and checks that
// every session row has exactly one audit record.
func TestKill9UnderWriteLoadLeavesNoChangeUnaudited(t *testing.T) {
	tests := []struct {
		name string
		// env returns the service's environment; result opens the store
		// once the restarted service has recovered (and stopped).
		setup func(t *testing.T, dir string) (env []string, result func() faultStore)
	}{
		{"sqlite", func(t *testing.T, dir string) ([]string, func() faultStore) {
			return baseEnv(dir, "SERVICE_API_KEY="+faultKey), func() faultStore { return openSQLite(t, dir) }
		}},
		{"postgres", func(t *testing.T, dir string) ([]string, func() faultStore) {
			url := pgtest.URL(t)
			// One instance: the grace only has to outlast its own requests.
			env := baseEnv(dir, "SERVICE_API_KEY="+faultKey, "SERVICE_DATABASE_URL="+url, "SERVICE_AUDIT_RECOVERY_GRACE=1s", pgAuditKey, pgAgentKey)
			return env, func() faultStore { return openPostgres(t, url) }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			env, result := tt.setup(t, dir)
			p := start(t, env, "serve")
			halt := make(chan struct{})
			ids := createSessions(t, p.URL, halt)
			waitForRecords(t, p.URL, faultKey, 300)
			p.Kill()
			close(halt)
			answers := <-ids
			t.Logf("%d responses before kill -9", len(answers))

			p = start(t, env, "serve")
			if tt.name == "postgres" {
				// The store is shared: wait for the periodic recovery.
				awaitSettled(t, result())
			}
			if code := stop(t, p); code != 0 {
				t.Fatalf("exit %d after restart\n%s", code, p.Stderr())
			}
			st := result()
			settled(t, account(t, st))
			kept(t, st, answers)
		})
	}
}

// kept checks that every session whose creation was answered 201 before
// the kill is in the store: a change is acknowledged only once its batch
// is durable.
func kept(t *testing.T, st faultStore, answers []answer) {
	t.Helper()
	created := 0
	for _, a := range answers {
		if a.status != http.StatusCreated {
			continue
		}
		var s struct{ ID string }
		if err := json.Unmarshal(a.body, &s); err != nil || s.ID == "" {
			t.Fatalf("201 of request %s: body %q: %v", a.requestID, a.body, err)
		}
		created++
		if _, err := st.sessions.GetSession(context.Background(), s.ID); err != nil {
			t.Errorf("session %s answered 201 (request %s) is lost: %v", s.ID, a.requestID, err)
		}
	}
	if created == 0 {
		t.Fatal("no session was answered 201 before the kill")
	}
	t.Logf("%d sessions answered 201 before the kill, all kept", created)
}

// privatePostgres is a PostgreSQL server of the test's own, in a temporary
// folder on a free port, so that it can be killed; the shared server on
// 5432 is never touched. It needs root (to run the server as the postgres
// user) and PostgreSQL 15's binaries.
type privatePostgres struct {
	bin, dir string
	port     int
}

const pgBin = "/usr/lib/postgresql/15/bin"

func startPrivatePostgres(t *testing.T) *privatePostgres {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("killing a database needs a private PostgreSQL server run as the postgres user: run the tests as root")
	}
	if _, err := os.Stat(filepath.Join(pgBin, "initdb")); err != nil {
		t.Skipf("no PostgreSQL 15 binaries in %s (apt-get install postgresql-15): %v", pgBin, err)
	}
	pgUser, err := user.Lookup("postgres")
	if err != nil {
		t.Skipf("no postgres user to run a private server as: %v", err)
	}
	uid, _ := strconv.Atoi(pgUser.Uid)
	dir, err := os.MkdirTemp("", "agentauth-pg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, uid, -1); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pg := &privatePostgres{bin: pgBin, dir: dir, port: ln.Addr().(*net.TCPAddr).Port}
	ln.Close()
	pg.run(t, "initdb", "-D", pg.data(), "-U", "postgres", "--auth=trust", "-N")
	pg.start(t)
	t.Cleanup(func() {
		// Stop whatever is left of it, however the test ended.
		_ = exec.Command("runuser", "-u", "postgres", "--", filepath.Join(pg.bin, "pg_ctl"), "-D", pg.data(), "-m", "immediate", "stop").Run()
	})
	return pg
}

func (pg *privatePostgres) data() string { return filepath.Join(pg.dir, "data") }

func (pg *privatePostgres) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", pg.port)
}

func (pg *privatePostgres) run(t *testing.T, tool string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", filepath.Join(pg.bin, tool)}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", tool, err, out)
	}
}

// start starts the server and waits until it accepts connections (after
// crash recovery, when it was killed).
func (pg *privatePostgres) start(t *testing.T) {
	t.Helper()
	pg.run(t, "pg_ctl", "-D", pg.data(), "-l", filepath.Join(pg.dir, "log"), "-w", "-t", "60",
		"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1", pg.port, pg.dir), "start")
}

// kill sends SIGKILL to the postmaster and its children, as a crash of
// the database host would end them.
func (pg *privatePostgres) kill(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pg.data(), "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil {
		t.Fatalf("postmaster.pid: %v", err)
	}
	children, _ := exec.Command("pgrep", "-P", strconv.Itoa(pid)).Output()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(children)) {
		if c, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(c, syscall.SIGKILL)
		}
	}
	// pg_ctl start refuses while a killed server's processes linger.
	testwait.Until(t, 30*time.Second, "the killed postmaster gone", func() (bool, string) {
		return syscall.Kill(pid, 0) != nil, "still running"
	})
}

// status sends one request and returns its status (0: no answer).
func status(method, url, body string) int {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+faultKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// awaitStatus sends the request until it is answered want (bounded).
func awaitStatus(t *testing.T, method, url, body string, want int) {
	t.Helper()
	testwait.Until(t, time.Minute, fmt.Sprintf("%s %s answered %d", method, url, want), func() (bool, string) {
		got := status(method, url, body)
		return got == want, fmt.Sprint(got)
	})
}

// TestDatabaseKilledUnderWriteLoad kills a private PostgreSQL server with
// SIGKILL while 16 clients create sessions, starts it again (crash
// recovery) and lets the running service recover: every session row has
// exactly one audit record.
func TestDatabaseKilledUnderWriteLoad(t *testing.T) {
	pg := startPrivatePostgres(t)
	env := baseEnv(t.TempDir(), "SERVICE_API_KEY="+faultKey, "SERVICE_DATABASE_URL="+pg.url(), "SERVICE_AUDIT_RECOVERY_GRACE=1s", pgAuditKey, pgAgentKey)
	p := start(t, env, "serve")
	halt := make(chan struct{})
	ids := createSessions(t, p.URL, halt)
	waitForRecords(t, p.URL, faultKey, 300)
	pg.kill(t)
	awaitStatus(t, "GET", p.URL+"/api/v2/me", "", 503)
	pg.start(t)
	awaitStatus(t, "GET", p.URL+"/api/v2/me", "", 200)
	st := openPostgres(t, pg.url())
	awaitSettled(t, st)
	close(halt)
	t.Logf("%d responses under load", len(<-ids))
	if code := stop(t, p); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.Stderr())
	}
	settled(t, account(t, st))
}

// TestDiskFullUnderWriteLoad runs the SQLite service on a small tmpfs that
// fills up under load: while full, every row is accounted for by a record
// or a pending intent; once space is freed, recovery records each pending
// change once.
func TestDiskFullUnderWriteLoad(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("filling a disk needs a tmpfs mount: run the tests as root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=12m,mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	// Ballast takes most of the space, so that the database fills the rest
	// quickly; removing it frees space again.
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 6<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	env := baseEnv(dir, "SERVICE_API_KEY="+faultKey, "SERVICE_AUDIT_RECOVERY_GRACE=1s")
	p := start(t, env, "serve")
	halt := make(chan struct{})
	ids := createSessions(t, p.URL, halt)
	awaitStatus(t, "POST", p.URL+"/api/v2/sessions", `{"title":"fault","mode":"ask"}`, 503)
	// Keep writing on the full disk for a while: some changes then fit in
	// the database while their records no longer fit in the log.
	for i := 0; i < 500; i++ {
		status("POST", p.URL+"/api/v2/sessions", `{"title":"fault","mode":"ask"}`)
	}
	close(halt)
	t.Logf("%d responses under load", len(<-ids))

	st := openSQLiteIndex(t, dir)
	full := account(t, st)
	if full.sessions != full.created+full.recovered+full.pending {
		t.Errorf("disk full: %v: want every session row audited or pending", full)
	}
	t.Logf("disk full: %v", full)

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	awaitSettled(t, st)
	if code := stop(t, p); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.Stderr())
	}
	settled(t, account(t, openSQLite(t, dir)))
}
