package wire

import (
	"context"
	"time"

	gwire "github.com/google/wire"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/ports"
)

// auditSet provides the audit log: the group committer, started only once
// the changes an earlier run left without their audit record are recorded.
var auditSet = gwire.NewSet(auditlog.New, recoveredAuditLog)

// recoveredAuditLog records, before anything is served, every change that
// was committed without its audit record (a crash, or an audit append that
// failed after the change: domain.AuditIntent), and from then on checks
// again now and then; the cleanup stops the checks. It takes the committer
// so that recovery runs after the audit log is open, and returns it as the
// service's audit log.
//
// Which intents are claimed: on SQLite at start, all of them, since no one
// else writes to the file and nothing is served yet; otherwise only those
// older than the grace (audit.recoveryGrace), so that a request still
// on its way to its record, here or on another instance, is never recorded
// twice.
func recoveredAuditLog(c *auditlog.Committer, st Stores, cfg config.Config, log *zap.Logger) (ports.AuditLog, func()) {
	log = log.Named("audit-recovery")
	grace := cfg.Audit.RecoveryGrace
	atStart := time.Now()
	if st.Shared {
		atStart = atStart.Add(-grace)
	}
	recoverIntents(context.Background(), st.Intents, atStart, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(min(max(grace/2, time.Second), time.Minute))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				recoverIntents(ctx, st.Intents, time.Now().Add(-grace), log)
			}
		}
	}()
	return c, func() { cancel(); <-done }
}

// recoverIntents runs one recovery, bounded in time: the database may not
// answer, or the audit index may be catching up with the log.
func recoverIntents(ctx context.Context, st ports.IntentRecovery, cutoff time.Time, log *zap.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	recs, err := st.RecoverIntents(ctx, cutoff)
	if err != nil {
		// Nothing is lost: the intents stay and the next run tries again.
		log.Error("recovering changes without an audit record failed; retrying later", zap.Error(err))
		return
	}
	for _, r := range recs {
		log.Warn("change committed without its audit record: recorded now", zap.String("request_id", r.RequestID),
			zap.Int64("seq", r.Seq), zap.String("reason", r.Reason))
	}
}
