package auditlog_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/golang/mock/gomock"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports/mocks"
)

// pingingStore is the mocked AuditStore with the Ping both real stores have.
type pingingStore struct {
	*mocks.MockAuditStore
	ping error
}

func (p *pingingStore) Ping(context.Context) error { return p.ping }

// TestReadyFollowsCommitsAndRecovers: ready before any commit; not ready
// after a failed commit while the store does not answer (saying why); ready
// again once the store answers its ping, without a commit (no requests
// arrive while the check fails); ready after a good commit.
func TestReadyFollowsCommitsAndRecovers(t *testing.T) {
	mock := mocks.NewMockAuditStore(gomock.NewController(t))
	store := &pingingStore{MockAuditStore: mock}
	c, closeLog := auditlog.New(store, auditlog.Options{}, zap.NewNop())
	defer closeLog()
	ctx := context.Background()

	if err := c.Ready(ctx); err != nil {
		t.Fatalf("before any commit: %v, want ready", err)
	}
	mock.EXPECT().AppendAudit(gomock.Any(), gomock.Any()).Return(errors.New("disk I/O error"))
	if err := c.Record(ctx, domain.AuditRecord{RequestID: "r1"}); err == nil {
		t.Fatal("a failed commit was reported as durable")
	}
	store.ping = errors.New("database is locked")
	if err := c.Ready(ctx); err == nil || !strings.Contains(err.Error(), "disk I/O error") {
		t.Errorf("after a failed commit, store down: %v, want the commit's error", err)
	}
	store.ping = nil
	if err := c.Ready(ctx); err != nil {
		t.Errorf("store answers again: %v, want ready", err)
	}
	mock.EXPECT().AppendAudit(gomock.Any(), gomock.Any()).Return(errors.New("no space left on device"))
	_ = c.Record(ctx, domain.AuditRecord{RequestID: "r2"})
	mock.EXPECT().AppendAudit(gomock.Any(), gomock.Any()).Return(nil)
	if err := c.Record(ctx, domain.AuditRecord{RequestID: "r3"}); err != nil {
		t.Fatal(err)
	}
	store.ping = errors.New("unused: a good commit already cleared it")
	if err := c.Ready(ctx); err != nil {
		t.Errorf("after a good commit: %v, want ready", err)
	}
}
