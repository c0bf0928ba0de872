package app

import (
	"context"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// IntentRecovery records the changes a store committed without their audit
// record, when one process is the store's only writer (SQLite: the audit
// log's lock file keeps a second one out) and the audit records are
// appended elsewhere (the append-only log, whose index settles intents).
// PostgreSQL, written by many instances, recovers in one transaction of its
// own instead.
//
// One case needs care: a record that reached the log before a crash but
// not the index is indexed again at the next start from the log, which
// does not keep the intent key, so its intents stay. Intents from before
// this recovery was made (after that replay) are therefore matched to the
// chain by request id and settled, not recorded twice.
type IntentRecovery struct {
	outbox ports.IntentOutbox
	audit  ports.AuditStore
	clock  ports.Clock
	// started is when the log had been replayed: later intents are
	// settled only by their own request's record.
	started time.Time
}

var _ ports.IntentRecovery = (*IntentRecovery)(nil)

// NewIntentRecovery recovers the intents of outbox into audit; make it once
// audit has replayed what its index lacked.
func NewIntentRecovery(outbox ports.IntentOutbox, audit ports.AuditStore, clock ports.Clock) *IntentRecovery {
	return &IntentRecovery{outbox: outbox, audit: audit, clock: clock, started: clock.Now()}
}

// recoveryPage is how many records one look at the chain's tail reads.
const recoveryPage = 500

// RecoverIntents appends one recovered record per request that has intents
// written before cutoff and no record in the chain. The store settles the
// intents when it stores the records.
func (r *IntentRecovery) RecoverIntents(ctx context.Context, cutoff time.Time) ([]domain.AuditRecord, error) {
	// A record durable in the log but not yet in its index has not settled
	// its request's intents yet (the index may be behind for long: a full
	// disk). A query answers only once the index holds every record durable
	// when it was asked, so the intents read after it are those of requests
	// without a record.
	if _, err := r.audit.QueryAudit(ctx, ports.AuditQuery{Limit: 1}); err != nil {
		return nil, err
	}
	changes, err := r.outbox.PendingChanges(ctx, cutoff)
	if err != nil || len(changes) == 0 {
		return nil, err
	}
	var replayed []domain.PendingChange
	for _, c := range changes {
		if c.At.Before(r.started) {
			replayed = append(replayed, c)
		}
	}
	recorded, err := r.recorded(ctx, replayed)
	if err != nil {
		return nil, err
	}
	var (
		settled []string
		records []domain.AuditRecord
	)
	now := r.clock.Now()
	for _, group := range domain.GroupChanges(changes) {
		if recorded[group[0].Intent.RequestID] {
			settled = append(settled, group[0].Intent.Key)
		} else {
			records = append(records, domain.RecoveredRecord(group, now))
		}
	}
	if len(settled) > 0 {
		if err := r.outbox.SettleIntents(ctx, settled); err != nil {
			return nil, err
		}
	}
	if err := r.audit.AppendAudit(ctx, records); err != nil {
		return nil, err
	}
	return records, nil
}

// PendingIntents counts the intents not yet settled by a record.
func (r *IntentRecovery) PendingIntents(ctx context.Context) (int, error) {
	return r.outbox.PendingIntents(ctx)
}

// recorded returns which of the changes' requests have a record in the
// chain. A request's record is always later than its changes, so only the
// tail since the oldest change is read.
func (r *IntentRecovery) recorded(ctx context.Context, changes []domain.PendingChange) (map[string]bool, error) {
	if len(changes) == 0 {
		return nil, nil
	}
	want := map[string]bool{}
	since := changes[0].At
	for _, c := range changes {
		want[c.Intent.RequestID] = true
		if c.At.Before(since) {
			since = c.At
		}
	}
	found := map[string]bool{}
	q := ports.AuditQuery{Since: since, Limit: recoveryPage}
	for {
		page, err := r.audit.QueryAudit(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, rec := range page {
			if want[rec.RequestID] {
				found[rec.RequestID] = true
			}
		}
		if len(page) < q.Limit {
			return found, nil
		}
		q.Before = page[len(page)-1].Seq
	}
}
