package app

import (
	"context"
	"crypto/ed25519"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Audit is the read side of the audit log.
type Audit struct {
	store       ports.AuditStore
	checkpoints ports.AuditCheckpointStore // nil: no checkpoints to check
	keys        map[string]ed25519.PublicKey
}

// NewAudit wires the use case.
func NewAudit(store ports.AuditStore) *Audit { return &Audit{store: store} }

// AuditPage is one page of records, newest first, and the cursor of the next
// page (0 when there is none).
type AuditPage struct {
	Records []domain.AuditRecord
	Next    int64
}

// Query returns one page. Limit is clamped to [1, MaxPageSize].
func (a *Audit) Query(ctx context.Context, q ports.AuditQuery) (AuditPage, error) {
	q.Limit = pageLimit(q.Limit)
	want := q.Limit
	q.Limit++ // one more tells whether a next page exists
	recs, err := a.store.QueryAudit(ctx, q)
	if err != nil {
		return AuditPage{}, err
	}
	page := AuditPage{Records: recs}
	if len(recs) > want {
		page.Records = recs[:want]
		page.Next = recs[want-1].Seq
	}
	return page, nil
}
