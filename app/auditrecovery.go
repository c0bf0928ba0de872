package app

import (
	"context"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// AuditRecovery records every change that was committed without its audit
// record (a crash, or an audit append that failed after the change:
// domain.AuditIntent): once before anything is served, then now and then.
//
// Which intents are claimed: at start on a store no one else writes to
// (SQLite), all of them, since nothing is served yet; otherwise only those
// older than the grace, so that a request still on its way to its record,
// here or on another instance, is never recorded twice.
type AuditRecovery struct {
	intents ports.IntentRecovery
	clock   ports.Clock
	grace   time.Duration
	shared  bool
	// report hears each run's recovered records, or its error (nothing is
	// lost then: the intents stay and the next run tries again).
	report func([]domain.AuditRecord, error)
}

// recoveryTimeout bounds one run: the database may not answer, or the
// audit index may be catching up with the log.
const recoveryTimeout = 30 * time.Second

// NewAuditRecovery recovers through intents; shared is set for a store
// other instances write to at the same time.
func NewAuditRecovery(intents ports.IntentRecovery, clock ports.Clock, grace time.Duration, shared bool,
	report func([]domain.AuditRecord, error)) *AuditRecovery {
	return &AuditRecovery{intents: intents, clock: clock, grace: grace, shared: shared, report: report}
}

// AtStart runs the recovery made before anything is served.
func (r *AuditRecovery) AtStart(ctx context.Context) {
	cutoff := r.clock.Now()
	if r.shared {
		cutoff = cutoff.Add(-r.grace)
	}
	r.once(ctx, cutoff)
}

// Run recovers the intents older than the grace every half grace (between
// a second and a minute) until ctx ends.
func (r *AuditRecovery) Run(ctx context.Context) {
	t := time.NewTicker(min(max(r.grace/2, time.Second), time.Minute))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.once(ctx, r.clock.Now().Add(-r.grace))
		}
	}
}

func (r *AuditRecovery) once(ctx context.Context, cutoff time.Time) {
	ctx, cancel := context.WithTimeout(ctx, recoveryTimeout)
	defer cancel()
	r.report(r.intents.RecoverIntents(ctx, cutoff))
}
