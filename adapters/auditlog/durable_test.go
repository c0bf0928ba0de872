package auditlog_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/adapters/auditlog/wal"
	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/porttest"
)

// dataDir is one service's data folder: the SQLite store and the audit log.
type dataDir string

func (d dataDir) db() sqlite.Path { return sqlite.Path(filepath.Join(string(d), "agentauth.db")) }
func (d dataDir) log() string     { return filepath.Join(string(d), "audit") }

// open opens the store and the durable log like the service does.
func (d dataDir) open(t *testing.T) (*sqlite.Store, *auditlog.Durable, func()) {
	t.Helper()
	st, closeStore, err := sqlite.Open(d.db(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	dur, closeLog, err := auditlog.OpenDurable(d.log(), st, auditlog.Retention{}, zap.NewNop())
	if err != nil {
		closeStore()
		t.Fatalf("OpenDurable: %v", err)
	}
	return st, dur, func() { closeLog(); closeStore() }
}

// exec runs SQL on the database behind the service's back.
func (d dataDir) exec(t *testing.T, query string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+string(d.db()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query); err != nil {
		t.Fatal(err)
	}
}

func record(i int) domain.AuditRecord {
	return domain.AuditRecord{Time: time.Now(), RequestID: fmt.Sprint("req-", i), Subject: fmt.Sprint("user-", i%3),
		Roles: []domain.Role{domain.RoleAdmin}, AuthMethod: "api_key", Method: "GET", Path: fmt.Sprint("/api/v2/me?i=", i),
		Decision: domain.AuditAllow, Reason: "ok", Status: 200}
}

// recordAll records n records from n goroutines through a group-commit
// writer over store; every Record must succeed.
func recordAll(t *testing.T, store ports.AuditStore, from, n int) {
	t.Helper()
	c, closeC := auditlog.New(store, auditlog.Options{BatchWait: time.Millisecond}, zap.NewNop())
	defer closeC()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := from; i < from+n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Record(context.Background(), record(i)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Record: %v", err)
	}
}

// chain reads the whole chain from store and checks that it verifies and
// holds want records numbered 1…want with time never going back.
func chain(t *testing.T, store ports.AuditStore, want int) []domain.AuditRecord {
	t.Helper()
	recs, err := store.AuditChain(context.Background(), 0, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != want {
		t.Fatalf("chain holds %d records, want %d", len(recs), want)
	}
	if brk := domain.VerifyChain(domain.GenesisHash, recs); len(brk) > 0 {
		t.Fatalf("chain breaks: %+v", brk)
	}
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("record %d has seq %d", i+1, r.Seq)
		}
		if i > 0 && r.Time.Before(recs[i-1].Time) {
			t.Fatalf("time goes back at seq %d", r.Seq)
		}
	}
	return recs
}

func TestDurableRecordsAreQueryableAtOnceAndAfterRestart(t *testing.T) {
	d := dataDir(t.TempDir())
	_, dur, closeAll := d.open(t)
	recordAll(t, dur, 0, 300)
	// Queries see every record that was answered, without waiting for a timer.
	got, err := dur.QueryAudit(context.Background(), ports.AuditQuery{Subject: "user-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 100 {
		t.Errorf("subject query: %d records, want 100", len(got))
	}
	before := chain(t, dur, 300)
	closeAll()

	_, dur, closeAll = d.open(t)
	defer closeAll()
	recordAll(t, dur, 300, 50)
	after := chain(t, dur, 350)
	if after[299].Hash != before[299].Hash {
		t.Error("the chain changed across a restart")
	}
}

func TestIndexIsMadeToMatchTheLogAtStart(t *testing.T) {
	tests := []struct {
		name   string
		damage string // SQL run on the index while the service is down
	}{
		{"newest rows lost (crash before the index committed)", `DELETE FROM audit WHERE seq > 120`},
		{"every row lost", `DELETE FROM audit`},
		{"newest row differs from the log", `UPDATE audit SET hash = 'x' WHERE seq = 200`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := dataDir(t.TempDir())
			_, dur, closeAll := d.open(t)
			recordAll(t, dur, 0, 200)
			want := chain(t, dur, 200)
			closeAll()
			d.exec(t, tt.damage)

			_, dur, closeAll = d.open(t)
			defer closeAll()
			got := chain(t, dur, 200)
			for i := range want {
				if got[i].Hash != want[i].Hash || got[i].RequestID != want[i].RequestID {
					t.Fatalf("record %d after recovery differs from the log", i+1)
				}
			}
		})
	}
}

func TestDatabaseFromBeforeTheLogIsCopiedIntoIt(t *testing.T) {
	d := dataDir(t.TempDir())
	st, closeStore, err := sqlite.Open(d.db(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]domain.AuditRecord, 40)
	for i := range recs {
		recs[i] = record(i)
	}
	if err := st.AppendAudit(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	closeStore()

	_, dur, closeAll := d.open(t)
	recordAll(t, dur, 40, 10)
	closeAll()
	d.exec(t, `DELETE FROM audit`) // the log alone must now hold all 50
	_, dur, closeAll = d.open(t)
	defer closeAll()
	chain(t, dur, 50)
}

func TestIndexAheadOfTheLogRefusesToStart(t *testing.T) {
	d := dataDir(t.TempDir())
	_, dur, closeAll := d.open(t)
	recordAll(t, dur, 0, 3)
	closeAll()
	backup := filepath.Join(t.TempDir(), "audit")
	if err := os.CopyFS(backup, os.DirFS(d.log())); err != nil {
		t.Fatal(err)
	}
	_, dur, closeAll = d.open(t)
	recordAll(t, dur, 3, 2)
	chain(t, dur, 5) // the index has caught up
	closeAll()
	// The log folder restored from the older backup: the index holds
	// records the log lacks.
	if err := errors.Join(os.RemoveAll(d.log()), os.CopyFS(d.log(), os.DirFS(backup))); err != nil {
		t.Fatal(err)
	}
	st, closeStore, err := sqlite.Open(d.db(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	_, _, err = auditlog.OpenDurable(d.log(), st, auditlog.Retention{}, zap.NewNop())
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("OpenDurable with the index ahead = %v, want an error naming missing log segments", err)
	}
}

func TestTimeNeverGoesBackAlongTheChain(t *testing.T) {
	d := dataDir(t.TempDir())
	_, dur, closeAll := d.open(t)
	defer closeAll()
	now := time.Now()
	recs := []domain.AuditRecord{record(0), record(1), record(2)}
	recs[0].Time, recs[1].Time, recs[2].Time = now, now.Add(-time.Hour), now.Add(time.Second)
	if err := dur.AppendAudit(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	got := chain(t, dur, 3)
	if !got[1].Time.Equal(got[0].Time) || !got[2].Time.After(got[1].Time) {
		t.Errorf("times %v, %v, %v: want the second raised to the first", got[0].Time, got[1].Time, got[2].Time)
	}
}

func TestSecondProcessCannotOpenTheLog(t *testing.T) {
	d := dataDir(t.TempDir())
	st, _, closeAll := d.open(t)
	defer closeAll()
	if _, _, err := auditlog.OpenDurable(d.log(), st, auditlog.Retention{}, zap.NewNop()); err == nil {
		t.Error("a second OpenDurable on the same folder succeeded")
	} else if !errors.Is(err, wal.ErrLocked) {
		t.Errorf("second OpenDurable = %v, want the lock error", err)
	}
}

// The index is written after Record returns; a caller's strings may live
// in a buffer its HTTP server reuses (fasthttp's path does).
func TestIndexKeepsTheRecordAsRecordedWhenTheCallerReusesItsBuffer(t *testing.T) {
	d := dataDir(t.TempDir())
	_, dur, closeAll := d.open(t)
	defer closeAll()
	buf := []byte("/api/v2/first")
	r := record(0)
	r.Path = unsafe.String(&buf[0], len(buf))
	if err := dur.AppendAudit(context.Background(), []domain.AuditRecord{r}); err != nil {
		t.Fatal(err)
	}
	copy(buf, "/api/v2/xxxxx") // the next request
	if got := chain(t, dur, 1); got[0].Path != "/api/v2/first" {
		t.Errorf("indexed path %q, want /api/v2/first", got[0].Path)
	}
}

func TestDurableConformsToTheAuditStorePort(t *testing.T) {
	porttest.RunAuditStore(t, func(t *testing.T) ports.AuditStore {
		_, dur, closeAll := dataDir(t.TempDir()).open(t)
		t.Cleanup(closeAll)
		return dur
	})
}
