package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
)

// cutoffs is an intent recovery that remembers the cutoffs it is asked
// for and answers with recs and err.
type cutoffs struct {
	asked []time.Time
	recs  []domain.AuditRecord
	err   error
}

func (c *cutoffs) RecoverIntents(_ context.Context, cutoff time.Time) ([]domain.AuditRecord, error) {
	c.asked = append(c.asked, cutoff)
	return c.recs, c.err
}

func (c *cutoffs) PendingIntents(context.Context) (int, error) { return 0, nil }

// TestAuditRecoveryAtStart: a store only this process writes recovers
// every intent before anything is served; a shared one only those older
// than the grace, which another instance's request may still be settling.
// Each run's result reaches the report.
func TestAuditRecoveryAtStart(t *testing.T) {
	grace := 2 * time.Minute
	failed := errors.New("database down")
	tests := []struct {
		name       string
		shared     bool
		recs       []domain.AuditRecord
		err        error
		wantCutoff time.Time
	}{
		{"own store", false, []domain.AuditRecord{{RequestID: "r1"}}, nil, now.t},
		{"shared store", true, nil, nil, now.t.Add(-grace)},
		{"failure reported", false, nil, failed, now.t},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			intents := &cutoffs{recs: tt.recs, err: tt.err}
			var gotRecs []domain.AuditRecord
			var gotErr error
			r := app.NewAuditRecovery(intents, now, grace, tt.shared, func(recs []domain.AuditRecord, err error) { gotRecs, gotErr = recs, err })
			r.AtStart(t.Context())
			if len(intents.asked) != 1 || !intents.asked[0].Equal(tt.wantCutoff) {
				t.Errorf("cutoffs %v, want [%v]", intents.asked, tt.wantCutoff)
			}
			if len(gotRecs) != len(tt.recs) || !errors.Is(gotErr, tt.err) {
				t.Errorf("report got %v, %v; want %v, %v", gotRecs, gotErr, tt.recs, tt.err)
			}
		})
	}
}
