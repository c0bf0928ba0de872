package auditlog_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// BenchmarkAuditQueries builds (once, then reuses) an audit log and its
// SQLite index of AGENTAUTH_AUDIT_BENCH_RECORDS records (default 10 M)
// spread over 35 days in AGENTAUTH_AUDIT_BENCH_DIR (default the temp
// folder), the way SQLite mode keeps them, then times every
// documented filter of GET /api/v2/audit at its default page size (50, so
// 51 rows asked) and prints one line per filter with p50 and p99. Run it
// with `go tool task bench:audit`.
func BenchmarkAuditQueries(b *testing.B) {
	n := int64(10_000_000)
	if v := os.Getenv("AGENTAUTH_AUDIT_BENCH_RECORDS"); v != "" {
		var err error
		if n, err = strconv.ParseInt(v, 10, 64); err != nil || n < 1000 {
			b.Fatalf("AGENTAUTH_AUDIT_BENCH_RECORDS=%q: want a number ≥ 1000", v)
		}
	}
	dir := os.Getenv("AGENTAUTH_AUDIT_BENCH_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("agentauth-audit-log-bench-%d", n))
	}
	path := filepath.Join(dir, "agentauth.db")
	index, closeIndex, err := sqlite.Open(sqlite.Path(path), zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	defer closeIndex()
	store, closeStore, err := auditlog.OpenDurable(filepath.Join(dir, "audit"), index, auditlog.Retention{}, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	defer closeStore()
	ctx := context.Background()
	start := time.Now().Add(-35 * 24 * time.Hour).Truncate(time.Hour)
	step := 35 * 24 * time.Hour / time.Duration(n)
	if err := fillAudit(ctx, b, store, dir, n, start, step); err != nil {
		b.Fatal(err)
	}
	at := func(seq int64) time.Time { return start.Add(time.Duration(seq) * step) }
	rnd := rand.New(rand.NewPCG(7, 8))
	anySeq := func() int64 { return 1 + rnd.Int64N(n) }
	window := func(d time.Duration) (time.Time, time.Time) {
		s := at(anySeq()).Add(-d / 2)
		return s, s.Add(d)
	}
	cases := []struct {
		name  string
		query func() ports.AuditQuery
	}{
		{"newest page", func() ports.AuditQuery { return ports.AuditQuery{} }},
		{"cursor anywhere", func() ports.AuditQuery { return ports.AuditQuery{Before: anySeq()} }},
		{"subject (1 of 1,000)", func() ports.AuditQuery { return ports.AuditQuery{Subject: subjectOf(anySeq())} }},
		{"subject, cursor anywhere", func() ports.AuditQuery { return ports.AuditQuery{Subject: subjectOf(anySeq()), Before: anySeq()} }},
		{"rare subject (1 in 100,000 records)", func() ports.AuditQuery { return ports.AuditQuery{Subject: "rare"} }},
		{"unknown subject", func() ports.AuditQuery { return ports.AuditQuery{Subject: "nobody"} }},
		{"decision=deny", func() ports.AuditQuery { return ports.AuditQuery{Decision: domain.AuditDeny} }},
		{"decision=deny, cursor anywhere", func() ports.AuditQuery { return ports.AuditQuery{Decision: domain.AuditDeny, Before: anySeq()} }},
		{"decision=allow", func() ports.AuditQuery { return ports.AuditQuery{Decision: domain.AuditAllow} }},
		{"subject + decision=deny", func() ports.AuditQuery {
			return ports.AuditQuery{Subject: subjectOf(anySeq()), Decision: domain.AuditDeny}
		}},
		{"since/until 1 hour", func() ports.AuditQuery { s, u := window(time.Hour); return ports.AuditQuery{Since: s, Until: u} }},
		{"since/until 1 day", func() ports.AuditQuery { s, u := window(24 * time.Hour); return ports.AuditQuery{Since: s, Until: u} }},
		{"since/until 30 days", func() ports.AuditQuery {
			s, u := window(30 * 24 * time.Hour)
			return ports.AuditQuery{Since: s, Until: u}
		}},
		{"since 30 days ago (no until)", func() ports.AuditQuery { return ports.AuditQuery{Since: time.Now().Add(-30 * 24 * time.Hour)} }},
		{"subject + 1 day", func() ports.AuditQuery {
			s, u := window(24 * time.Hour)
			return ports.AuditQuery{Subject: subjectOf(anySeq()), Since: s, Until: u}
		}},
		{"subject + decision=deny + 1 hour", func() ports.AuditQuery {
			s, u := window(time.Hour)
			return ports.AuditQuery{Subject: subjectOf(anySeq()), Decision: domain.AuditDeny, Since: s, Until: u}
		}},
		{"decision=deny + 30 days + cursor", func() ports.AuditQuery {
			s, u := window(30 * 24 * time.Hour)
			return ports.AuditQuery{Decision: domain.AuditDeny, Since: s, Until: u, Before: anySeq()}
		}},
		{"rare subject + decision=deny + 30 days", func() ports.AuditQuery {
			s, u := window(30 * 24 * time.Hour)
			return ports.AuditQuery{Subject: "rare", Decision: domain.AuditDeny, Since: s, Until: u}
		}},
	}
	const runs = 200
	fmt.Printf("\naudit queries at %d records (%s), page of 50 (51 rows asked), %d runs each:\n\n", n, dir, runs)
	fmt.Printf("| filter | p50 | p99 | CPU p50 | CPU p99 | rows |\n|---|---|---|---|---|---|\n")
	// The pure-Go driver runs a query on the calling goroutine: pinned to
	// its thread, the thread's CPU time is the query's, whatever else the
	// machine runs (wall time includes waiting for a core).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for b.Loop() {
		for _, c := range cases {
			took, cpu := make([]time.Duration, runs), make([]time.Duration, runs)
			rows := 0
			for i := range took {
				q := c.query()
				q.Limit = 51
				t0, c0 := time.Now(), threadCPU()
				got, err := store.QueryAudit(ctx, q)
				took[i], cpu[i] = time.Since(t0), threadCPU()-c0
				if err != nil {
					b.Fatalf("%s: %v", c.name, err)
				}
				rows += len(got)
			}
			slices.Sort(took)
			slices.Sort(cpu)
			fmt.Printf("| %s | %s | %s | %s | %s | %d |\n", c.name, ms(took[runs/2]), ms(took[runs*99/100]), ms(cpu[runs/2]), ms(cpu[runs*99/100]), rows/runs)
		}
	}
}

// threadCPU is the CPU time of the calling thread
// (CLOCK_THREAD_CPUTIME_ID, nanoseconds).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 { // 3: CLOCK_THREAD_CPUTIME_ID
		panic(errno)
	}
	return time.Duration(ts.Nano())
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// subjectOf is the subject of record seq: 1,000 subjects in turn, and
// "rare" once in 100,000 records.
func subjectOf(seq int64) string {
	if seq%100_000 == 0 {
		return "rare"
	}
	return "user-" + strconv.FormatInt(seq%1000, 10)
}

// fillAudit appends records up to n, continuing what an earlier run left,
// in batches of 4,096 (each synced, then indexed, as the service does), one
// record every step from start; 5% are denials.
func fillAudit(ctx context.Context, b *testing.B, store *auditlog.Durable, dir string, n int64, start time.Time, step time.Duration) error {
	head, err := store.QueryAudit(ctx, ports.AuditQuery{Limit: 1})
	if err != nil {
		return err
	}
	var seq int64
	if len(head) > 0 {
		seq = head[0].Seq
	}
	if seq >= n {
		return nil
	}
	b.Logf("building %d audit records in %s (once; later runs reuse it)", n-seq, dir)
	t0 := time.Now()
	batch := make([]domain.AuditRecord, 0, 4096)
	for seq < n {
		batch = batch[:0]
		for len(batch) < cap(batch) && seq < n {
			seq++
			r := domain.AuditRecord{Time: start.Add(time.Duration(seq) * step), RequestID: fmt.Sprintf("%024x", seq),
				Subject: subjectOf(seq), Roles: []domain.Role{domain.RoleUser}, AuthMethod: domain.MethodAPIKey,
				Method: "GET", Path: "/api/v2/sessions?limit=20", Client: "10.1.2.3", Decision: domain.AuditAllow,
				Reason: "role USER grants sessions:read", Status: 200}
			if seq%20 == 0 {
				r.Decision, r.Reason, r.Status = domain.AuditDeny, "missing permission sessions:write", 403
			}
			batch = append(batch, r)
		}
		if err := store.AppendAudit(ctx, batch); err != nil {
			return err
		}
		if seq%1_000_000 < int64(len(batch)) {
			b.Logf("%d records, %s", seq, time.Since(t0).Round(time.Second))
		}
	}
	// Wait for the index (a query does, a few seconds at a time), then
	// fold SQLite's WAL into the database as a long-running service's
	// checkpoints would have.
	for {
		_, err := store.QueryAudit(ctx, ports.AuditQuery{Limit: 1})
		if !errors.Is(err, domain.ErrUnavailable) {
			if err != nil {
				return err
			}
			break
		}
	}
	b.Logf("indexed, %s", time.Since(t0).Round(time.Second))
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "agentauth.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}
