package wire

import (
	"context"

	gwire "github.com/google/wire"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// auditSet provides the audit log: the group committer, started only once
// the changes an earlier run left without their audit record are recorded.
var auditSet = gwire.NewSet(auditlog.New, recoveredAuditLog)

// recoveredAuditLog runs the audit recovery (app.AuditRecovery) before
// anything is served, and from then on in the background; the cleanup
// stops it. It takes the committer so that recovery runs after the audit
// log is open, and returns it as the service's audit log.
func recoveredAuditLog(c *auditlog.Committer, st Stores, cfg config.Config, log *zap.Logger) (ports.AuditLog, func()) {
	log = log.Named("audit-recovery")
	report := func(recs []domain.AuditRecord, err error) {
		if err != nil {
			log.Error("recovering changes without an audit record failed; retrying later", zap.Error(err))
			return
		}
		for _, r := range recs {
			log.Warn("change committed without its audit record: recorded now", zap.String("request_id", r.RequestID),
				zap.Int64("seq", r.Seq), zap.String("reason", r.Reason))
		}
	}
	r := app.NewAuditRecovery(st.Intents, app.SystemClock{}, cfg.Audit.RecoveryGrace, st.Shared, report)
	r.AtStart(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	return c, func() { cancel(); <-done }
}
