package auditlog

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// failingIndex refuses index writes while broken is set (a full disk).
type failingIndex struct {
	*sqlite.Store
	broken atomic.Bool
}

func (f *failingIndex) IndexAudit(ctx context.Context, recs []domain.AuditRecord, at []ports.AuditLocation) error {
	if f.broken.Load() {
		return errors.New("disk full")
	}
	return f.Store.IndexAudit(ctx, recs, at)
}

func TestAnIndexThatCannotBeWrittenNeitherLosesRecordsNorHoldsQueries(t *testing.T) {
	old := maxIndexWait
	maxIndexWait = 200 * time.Millisecond
	defer func() { maxIndexWait = old }()
	dir := t.TempDir()
	st, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(dir, "a.db")), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	idx := &failingIndex{Store: st}
	idx.broken.Store(true)
	d, closeLog, err := OpenDurable(filepath.Join(dir, "audit"), idx, Retention{}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer closeLog()
	recs := []domain.AuditRecord{{Time: time.Now(), RequestID: "a", Decision: domain.AuditAllow}, {Time: time.Now(), RequestID: "b", Decision: domain.AuditDeny}}
	if err := d.AppendAudit(context.Background(), recs); err != nil {
		t.Fatalf("AppendAudit with the index failing: %v (the log is the record; it must succeed)", err)
	}
	if _, err := d.QueryAudit(context.Background(), ports.AuditQuery{}); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("query while the index cannot catch up = %v, want ErrUnavailable after a bounded wait", err)
	}
	idx.broken.Store(false) // space freed: the indexer's retry catches up
	got, err := d.QueryAudit(context.Background(), ports.AuditQuery{})
	for i := 0; err != nil && i < 50; i++ { // the retry backs off up to a second
		got, err = d.QueryAudit(context.Background(), ports.AuditQuery{})
	}
	if err != nil || len(got) != 2 {
		t.Fatalf("after recovery: %d records, %v; want both", len(got), err)
	}
}

// Records the index cannot take are not held in memory without bound:
// past maxBacklog they are read back from the log once the index works.
func TestABrokenIndexKeepsMemoryBoundedAndCatchesUpFromTheLog(t *testing.T) {
	oldWait, oldBacklog := maxIndexWait, maxBacklog
	maxIndexWait, maxBacklog = 200*time.Millisecond, 5
	defer func() { maxIndexWait, maxBacklog = oldWait, oldBacklog }()
	dir := t.TempDir()
	st, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(dir, "a.db")), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	idx := &failingIndex{Store: st}
	idx.broken.Store(true)
	d, closeLog, err := OpenDurable(filepath.Join(dir, "audit"), idx, Retention{}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer closeLog()
	for b := range 5 {
		recs := make([]domain.AuditRecord, 4)
		for i := range recs {
			recs[i] = domain.AuditRecord{Time: time.Now(), RequestID: string(rune('a' + b*4 + i)), Decision: domain.AuditAllow}
		}
		if err := d.AppendAudit(context.Background(), recs); err != nil {
			t.Fatal(err)
		}
	}
	d.pmu.Lock()
	lagging, held := d.lagging, len(d.pending)
	d.pmu.Unlock()
	if !lagging || held > 8 {
		t.Errorf("with 20 records not indexed: lagging %v, %d held in memory; want lagging and at most 8", lagging, held)
	}
	idx.broken.Store(false)
	got, err := d.QueryAudit(context.Background(), ports.AuditQuery{})
	for i := 0; err != nil && i < 50; i++ {
		got, err = d.QueryAudit(context.Background(), ports.AuditQuery{})
	}
	if err != nil || len(got) != 20 {
		t.Fatalf("after recovery: %d records, %v; want 20", len(got), err)
	}
	// Back to normal: new records go through memory again.
	if err := d.AppendAudit(context.Background(), []domain.AuditRecord{{Time: time.Now(), RequestID: "z", Decision: domain.AuditDeny}}); err != nil {
		t.Fatal(err)
	}
	if got, err := d.QueryAudit(context.Background(), ports.AuditQuery{}); err != nil || len(got) != 21 {
		t.Fatalf("after one more: %d records, %v; want 21", len(got), err)
	}
}
