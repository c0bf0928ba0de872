package auditlog

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/testwait"
	"github.com/agentauth/agentauth/ports"
)

// gatedStore holds every append until the test opens the gate.
type gatedStore struct {
	ports.AuditStore
	entered chan int
	gate    chan struct{}
}

func (g *gatedStore) AppendAudit(ctx context.Context, recs []domain.AuditRecord) error {
	g.entered <- len(recs)
	<-g.gate
	return nil
}

func TestDepthCountsRecordsNotYetCommitted(t *testing.T) {
	store := &gatedStore{entered: make(chan int, 16), gate: make(chan struct{})}
	c, closeLog := New(store, Options{}, zap.NewNop())
	defer closeLog()
	if got := c.Depth(); got != 0 {
		t.Fatalf("Depth before any record = %d, want 0", got)
	}
	const n = 5
	done := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() { done <- c.Record(context.Background(), domain.AuditRecord{RequestID: "r"}) }()
	}
	// Wait (without timing assumptions) until all five are inside Record:
	// the first batch is held in the store, the others wait behind it.
	<-store.entered
	testwait.Until(t, 30*time.Second, "every caller inside Record", func() (bool, string) {
		return c.Depth() == n, fmt.Sprint("depth ", c.Depth())
	})
	close(store.gate)
	for i := 0; i < n; i++ {
		if err := <-done; err != nil {
			t.Fatalf("Record: %v", err)
		}
	}
	if got := c.Depth(); got != 0 {
		t.Errorf("Depth after every record committed = %d, want 0", got)
	}
}
