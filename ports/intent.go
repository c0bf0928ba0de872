package ports

import (
	"context"
	"errors"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// ErrNoAuditIntent is the error of a state change attempted outside an
// audited request: stores refuse it (fail closed) rather than make a change
// that no audit record would ever name.
var ErrNoAuditIntent = errors.New("state change without an audit intent: every change must be made for an audited request (ports.WithAuditIntent)")

type intentKey struct{}

// WithAuditIntent returns ctx carrying the request's intent. The edge sets
// it for every request before any handler runs, and fills in the principal
// once it is known; stores read it when they write a change.
func WithAuditIntent(ctx context.Context, in *domain.AuditIntent) context.Context {
	return context.WithValue(ctx, intentKey{}, in)
}

// AuditIntentFrom returns the request's intent, or nil outside a request.
func AuditIntentFrom(ctx context.Context) *domain.AuditIntent {
	in, _ := ctx.Value(intentKey{}).(*domain.AuditIntent)
	return in
}

// IntentRecovery records the changes whose audit record never came.
type IntentRecovery interface {
	// RecoverIntents appends one recovered audit record
	// (domain.RecoveredRecord) per request that has intents written
	// before cutoff and no record, and settles those intents; a request
	// recovered once is never recovered again. It returns the records
	// appended.
	RecoverIntents(ctx context.Context, cutoff time.Time) ([]domain.AuditRecord, error)
	// PendingIntents counts the intents not yet settled by a record.
	PendingIntents(ctx context.Context) (int, error)
}

// IntentOutbox is a store's table of intents, for a recovery that runs in
// the only process writing to the store (app.IntentRecovery over SQLite).
// The store settles intents itself in every transaction that stores
// audit records.
type IntentOutbox interface {
	// PendingChanges returns the intents written before cutoff, oldest
	// first.
	PendingChanges(ctx context.Context, cutoff time.Time) ([]domain.PendingChange, error)
	// SettleIntents deletes the intents filed under keys
	// (domain.AuditIntent.Key), of requests known to have a record.
	SettleIntents(ctx context.Context, keys []string) error
	PendingIntents(ctx context.Context) (int, error)
}
