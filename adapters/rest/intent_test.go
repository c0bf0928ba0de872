package rest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// failingLog refuses every record, as a full disk or a lost database does.
type failingLog struct{}

func (failingLog) Record(_ context.Context, _ domain.AuditRecord) error {
	return errors.New("disk full")
}

// TestChangeCarriesTheRequestsIntent: a change made by a request is
// written with the request's intent (id, caller, method, path); the request's
// record settles it, and when the record cannot be written the intent stays
// for recovery, which names the change and the caller.
func TestChangeCarriesTheRequestsIntent(t *testing.T) {
	tests := []struct {
		name       string
		log        func(t *testing.T, st ports.AuditStore) ports.AuditLog
		status     int
		wantIntent int
	}{
		{"record committed", func(t *testing.T, st ports.AuditStore) ports.AuditLog {
			c, stop := auditlog.New(st, auditlog.Options{}, zap.NewNop())
			t.Cleanup(stop)
			return c
		}, 201, 0},
		{"record failed", func(*testing.T, ports.AuditStore) ports.AuditLog { return failingLog{} }, 503, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var store ports.IntentRecovery
			h := start(t, options{auditLog: func(st ports.AuditStore) ports.AuditLog {
				store = app.NewIntentRecovery(st.(ports.IntentOutbox), st, app.SystemClock{})
				return tt.log(t, st)
			}})
			r := h.do(t, "POST", "/api/v2/sessions", bearer(keyAdmin), `{"title":"t","mode":"ask"}`)
			if r.status != tt.status {
				t.Fatalf("POST /api/v2/sessions = %d, want %d: %s", r.status, tt.status, r.body)
			}
			// A record settles its intent when the log's index takes it;
			// a query waits for the index.
			if _, err := h.store.QueryAudit(t.Context(), ports.AuditQuery{Limit: 1}); err != nil {
				t.Fatal(err)
			}
			if n, err := store.PendingIntents(t.Context()); err != nil || n != tt.wantIntent {
				t.Fatalf("PendingIntents = %d, %v; want %d", n, err, tt.wantIntent)
			}
			recs, err := store.RecoverIntents(t.Context(), time.Now().Add(time.Minute))
			if err != nil || len(recs) != tt.wantIntent {
				t.Fatalf("RecoverIntents = %d records, %v; want %d", len(recs), err, tt.wantIntent)
			}
			for _, rec := range recs {
				if rec.RequestID != r.header.Get("X-Request-ID") || rec.Subject != "admin" || rec.AuthMethod != domain.MethodAPIKey ||
					len(rec.Roles) != 1 || rec.Roles[0] != domain.RoleAdmin || rec.Method != "POST" || rec.Path != "/api/v2/sessions" ||
					rec.Decision != domain.AuditAllow || !strings.HasPrefix(rec.Reason, domain.RecoveredPrefix+"create session ses_") {
					t.Errorf("recovered record %+v does not name the request %s, its caller and its change", rec, r.header.Get("X-Request-ID"))
				}
			}
		})
	}
}
