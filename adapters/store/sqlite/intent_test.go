package sqlite_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// TestIntentRecoveryAfterReplay: after a crash the audit log indexes again
// the records the index lost, without their intent keys. Recovery made
// after that replay settles the intents of those requests by request id,
// and records only the change whose record never reached the log.
func TestIntentRecoveryAfterReplay(t *testing.T) {
	st := newStore(t)
	request := func(id string) context.Context {
		return ports.WithAuditIntent(t.Context(), &domain.AuditIntent{RequestID: id, Subject: "alice", Method: "POST", Path: "/api/v2/sessions"})
	}
	answered, lost := request("answered"), request("lost")
	for ctx, id := range map[context.Context]string{answered: "s1", lost: "s2"} {
		if err := st.CreateSession(ctx, domain.Session{ID: id, Owner: "alice", Mode: domain.ModeAsk, State: domain.SessionActive, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	// The answered request's record as the log replays it: no intent key.
	replayed := domain.AuditRecord{Time: time.Now(), RequestID: "answered", Subject: "alice", Decision: domain.AuditAllow, Status: 201}
	if err := st.AppendAudit(t.Context(), []domain.AuditRecord{replayed}); err != nil {
		t.Fatal(err)
	}
	recovery := app.NewIntentRecovery(st, st, app.SystemClock{})
	recs, err := recovery.RecoverIntents(t.Context(), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].RequestID != "lost" || !strings.Contains(recs[0].Reason, "create session s2") {
		t.Fatalf("recovered %+v, want one record, of the lost request's change", recs)
	}
	if n, err := st.PendingIntents(t.Context()); err != nil || n != 0 {
		t.Errorf("PendingIntents = %d, %v; want 0", n, err)
	}
}
