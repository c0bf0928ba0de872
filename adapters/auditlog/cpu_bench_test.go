package auditlog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/adapters/store/postgres"
	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// countingStore counts the batches the writer commits.
type countingStore struct {
	ports.AuditStore
	batches atomic.Int64
}

func (c *countingStore) AppendAudit(ctx context.Context, recs []domain.AuditRecord) error {
	c.batches.Add(1)
	return c.AuditStore.AppendAudit(ctx, recs)
}

// processCPU is the process's CPU time so far: user and system (the
// kernel's, on its behalf: syscalls, the sync).
func processCPU() (user, system time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// BenchmarkRecordCPU measures the server CPU an audit record costs, as
// requests pay it: 64 or 256 goroutines (connections) call Record
// concurrently through the group-commit writer, for 3 or 1,000 subjects
// (the index writes a row per subject per block), with records made before the clock
// starts; the process's CPU time (getrusage, user
// + system, every thread) over the run, divided by the records, is
// reported as cpu-µs/record, with the mean batch size. For the log, the
// run ends only when the SQLite index has caught up, so indexing is
// counted. CPU is shared with whatever else runs: compare runs made close
// together.
func BenchmarkRecordCPU(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) (ports.AuditStore, func())
	}{
		{"sqlite-synchronous-full", func(b *testing.B) (ports.AuditStore, func()) {
			st, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(b.TempDir(), "a.db")), zap.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			return st, closeStore
		}},
		{"log+sqlite-index", func(b *testing.B) (ports.AuditStore, func()) {
			dir := b.TempDir()
			st, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(dir, "a.db")), zap.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			dur, closeLog, err := auditlog.OpenDurable(filepath.Join(dir, "audit"), st, auditlog.Retention{}, zap.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			return dur, func() { closeLog(); closeStore() }
		}},
		{"postgres", func(b *testing.B) (ports.AuditStore, func()) {
			st, closeStore, err := postgres.Open(context.Background(), postgres.URL(pgtest.URL(b)), zap.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			return st, closeStore
		}},
	}
	for _, s := range stores {
		for _, load := range []struct{ callers, subjects int }{{64, 3}, {64, 1000}, {256, 1000}} {
			callers := load.callers
			b.Run(fmt.Sprintf("%s/%d-callers-%d-subjects", s.name, callers, load.subjects), func(b *testing.B) {
				st, closeStore := s.open(b)
				defer closeStore()
				counted := &countingStore{AuditStore: st}
				c, closeC := auditlog.New(counted, auditlog.Options{BatchWait: 500 * time.Microsecond}, zap.NewNop())
				defer closeC()
				perCaller := max(b.N/callers, 1)
				// Warm up: connections open, statements prepared.
				if err := c.Record(context.Background(), record(-1)); err != nil {
					b.Fatal(err)
				}
				var server backends
				if s.name == "postgres" {
					server = serverBackends(b)
				}
				// The records are made beforehand (a request has its record's
				// fields anyway; what is measured is what the audit adds), a
				// few per caller, reused: a heap of b.N records would make the
				// garbage collector's marking, not the audit, the cost.
				const distinct = 16
				recs := make([][distinct]domain.AuditRecord, callers)
				for g := range recs {
					for i := range recs[g] {
						recs[g][i] = record(g*distinct + i)
						recs[g][i].Subject = fmt.Sprint("user-", (g*distinct+i)%load.subjects)
						recs[g][i].Path = fmt.Sprintf("/api/v2/sessions/%d/agents?limit=20&offset=%d", g, i)
					}
				}
				runtime.GC()
				user0, sys0 := processCPU()
				server0 := server.cpu()
				b.ResetTimer()
				var wg sync.WaitGroup
				for g := range callers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range perCaller {
							if err := c.Record(context.Background(), recs[g][i%distinct]); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				// The log's index follows the log: wait until it has caught up.
				if _, err := st.QueryAudit(context.Background(), ports.AuditQuery{Limit: 1}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				n := float64(callers * perCaller)
				user, sys := processCPU()
				user, sys = user-user0, sys-sys0
				b.ReportMetric(float64(user+sys)/float64(time.Microsecond)/n, "cpu-µs/record")
				b.ReportMetric(float64(sys)/float64(time.Microsecond)/n, "of-which-kernel-µs/record")
				if len(server) > 0 {
					b.ReportMetric(float64(server.cpu()-server0)/float64(time.Microsecond)/n, "pg-server-cpu-µs/record")
				}
				b.ReportMetric(n/float64(counted.batches.Load()), "records/batch")
			})
		}
	}
}

// backends are PostgreSQL server processes (on this machine).
type backends []int

// serverBackends are the server processes of the benchmark's connections:
// the service's, opened in the last seconds. Another test connecting to the
// same server at that moment would be counted too.
func serverBackends(b *testing.B) backends {
	conn, err := pgx.Connect(context.Background(), pgtest.URL(b))
	if err != nil {
		return nil
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE application_name = 'agentauth'
		AND backend_start > now() - interval '5 seconds'`)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		b.Fatal(err)
	}
	return pids
}

// cpu is their CPU time (user + system) from /proc, in clock ticks of 10 ms.
func (p backends) cpu() time.Duration {
	var total time.Duration
	for _, pid := range p {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		utime, _ := strconv.ParseInt(fields[11], 10, 64)
		stime, _ := strconv.ParseInt(fields[12], 10, 64)
		total += time.Duration(utime+stime) * 10 * time.Millisecond
	}
	return total
}
