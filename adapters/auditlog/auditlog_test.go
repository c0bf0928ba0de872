package auditlog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/golang/mock/gomock"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
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
	c, closeLog := auditlog.New(store, auditlog.Options{}, zap.NewNop())
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
	c, closeLog := auditlog.New(store, auditlog.Options{}, zap.NewNop())
	defer closeLog()
	err := c.Record(context.Background(), domain.AuditRecord{RequestID: "r"})
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("Record() = %v, want an error wrapping ErrUnavailable", err)
	}
}

func TestRecordAfterCloseIsRefused(t *testing.T) {
	store := mocks.NewMockAuditStore(gomock.NewController(t))
	store.EXPECT().AppendAudit(gomock.Any(), gomock.Len(1)).Return(nil).Times(1)
	c, closeLog := auditlog.New(store, auditlog.Options{}, zap.NewNop())
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
	c, closeLog := auditlog.New(store, auditlog.Options{}, zap.NewNop())
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

func TestARefusedRecordFailsOnlyItsOwnRequest(t *testing.T) {
	tests := []struct {
		name    string
		refused map[string]bool
	}{
		{"one refused among many", map[string]bool{"req-17": true}},
		{"two refused", map[string]bool{"req-3": true, "req-40": true}},
		{"none refused", map[string]bool{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := mocks.NewMockAuditStore(gomock.NewController(t))
			mem := &memory{committed: map[string]bool{}}
			// The store refuses a whole batch that holds a refused record,
			// as a database refuses a transaction.
			store.EXPECT().AppendAudit(gomock.Any(), gomock.Any()).DoAndReturn(func(ctx context.Context, recs []domain.AuditRecord) error {
				for _, r := range recs {
					if tt.refused[r.RequestID] {
						return fmt.Errorf("invalid byte sequence: %w", ports.ErrRecordRefused)
					}
				}
				return mem.append(ctx, recs)
			}).AnyTimes()
			c, closeLog := auditlog.New(store, auditlog.Options{BatchWait: 5 * time.Millisecond}, zap.NewNop())
			defer closeLog()
			const n = 64
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = c.Record(context.Background(), domain.AuditRecord{RequestID: fmt.Sprint("req-", i)})
				}()
			}
			wg.Wait()
			for i, err := range errs {
				id := fmt.Sprint("req-", i)
				switch {
				case tt.refused[id] && !errors.Is(err, domain.ErrUnavailable):
					t.Errorf("%s (refused) = %v, want ErrUnavailable", id, err)
				case !tt.refused[id] && err != nil:
					t.Errorf("%s = %v, want nil: another request's record failed it", id, err)
				case !tt.refused[id] && !mem.committed[id]:
					t.Errorf("%s returned before it was committed", id)
				}
			}
		})
	}
}
