package auditlog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/golang/mock/gomock"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports/mocks"
)

// memory records what the store committed.
type memory struct {
	mu        sync.Mutex
	committed map[string]bool
	batches   int
}

func (m *memory) append(_ context.Context, recs []domain.AuditRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.batches++
	for _, r := range recs {
		m.committed[r.RequestID] = true
	}
	return nil
}

func TestEveryRecordIsCommittedBeforeRecordReturns(t *testing.T) {
	store := mocks.NewMockAuditStore(gomock.NewController(t))
	mem := &memory{committed: map[string]bool{}}
	store.EXPECT().AppendAudit(gomock.Any(), gomock.Any()).DoAndReturn(mem.append).AnyTimes()
	c, closeLog := auditlog.New(store, zap.NewNop())
	defer closeLog()

	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprint("req-", i)
			if err := c.Record(context.Background(), domain.AuditRecord{RequestID: id}); err != nil {
				errs <- err
				return
			}
			mem.mu.Lock()
			defer mem.mu.Unlock()
			if !mem.committed[id] {
				errs <- fmt.Errorf("%s returned before it was committed", id)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(mem.committed) != n || mem.batches > n {
		t.Errorf("committed %d records in %d batches, want %d in at most %d", len(mem.committed), mem.batches, n, n)
	}
}

func TestCommitFailureReachesEveryWaiter(t *testing.T) {
	store := mocks.NewMockAuditStore(gomock.NewController(t))
	store.EXPECT().AppendAudit(gomock.Any(), gomock.Any()).Return(errors.New("disk full")).AnyTimes()
	c, closeLog := auditlog.New(store, zap.NewNop())
	defer closeLog()
	err := c.Record(context.Background(), domain.AuditRecord{RequestID: "r"})
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("Record() = %v, want an error wrapping ErrUnavailable", err)
	}
}

func TestRecordAfterCloseIsRefused(t *testing.T) {
	store := mocks.NewMockAuditStore(gomock.NewController(t))
	store.EXPECT().AppendAudit(gomock.Any(), gomock.Len(1)).Return(nil).Times(1)
	c, closeLog := auditlog.New(store, zap.NewNop())
	if err := c.Record(context.Background(), domain.AuditRecord{RequestID: "before"}); err != nil {
		t.Fatal(err)
	}
	closeLog()
	closeLog() // idempotent
	if err := c.Record(context.Background(), domain.AuditRecord{RequestID: "after"}); !errors.Is(err, auditlog.ErrClosed) {
		t.Errorf("Record after Close = %v, want ErrClosed", err)
	}
}

func TestCancelledCallerIsNotHandedOver(t *testing.T) {
	store := mocks.NewMockAuditStore(gomock.NewController(t))
	entered, release := make(chan struct{}), make(chan struct{})
	store.EXPECT().AppendAudit(gomock.Any(), gomock.Any()).DoAndReturn(func(context.Context, []domain.AuditRecord) error {
		entered <- struct{}{}
		<-release
		return nil
	}).Times(1)
	c, closeLog := auditlog.New(store, zap.NewNop())
	held := make(chan error, 1)
	go func() { held <- c.Record(context.Background(), domain.AuditRecord{RequestID: "holds the writer"}) }()
	<-entered // the writer is inside a commit and receives nothing else
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Record(ctx, domain.AuditRecord{RequestID: "cancelled"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Record(cancelled) = %v, want context.Canceled", err)
	}
	close(release)
	if err := <-held; err != nil {
		t.Errorf("held record: %v", err)
	}
	closeLog()
}
