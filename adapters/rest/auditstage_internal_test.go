package rest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentauth/agentauth/domain"
)

func TestAuditOutcome(t *testing.T) {
	granted := domain.Decision{Allowed: true, Permission: domain.PermSessionsRead, Role: domain.RoleUser}
	denied := domain.Decision{Permission: domain.PermAuditRead, Roles: []domain.Role{domain.RoleUser}}
	forbidden := fmt.Errorf("session s1 belongs to another user: %w", domain.ErrForbidden)
	hidden := fmt.Errorf("session s1: %w", domain.ErrNotVisible)
	badInput := fmt.Errorf("title: %w", domain.ErrInvalidInput)
	unauthenticated := fmt.Errorf("%w: no credential", domain.ErrUnauthenticated)
	tests := []struct {
		name       string
		facts      auditFacts
		want       domain.AuditDecision
		wantReason string
	}{
		{"public, answered", auditFacts{public: true}, domain.AuditAllow, "public endpoint"},
		{"public, failed", auditFacts{public: true, err: errors.New("bad credentials")}, domain.AuditDeny, "bad credentials"},
		{"public, with a note", auditFacts{public: true, note: "login session started"}, domain.AuditAllow, "public endpoint; login session started"},
		{"public, refused by the handler", auditFacts{public: true, refused: true, note: "grant refused"}, domain.AuditDeny, "public endpoint; grant refused"},
		{"granted, answered", auditFacts{decided: true, decision: granted}, domain.AuditAllow, granted.Reason()},
		{"granted, then the resource refused", auditFacts{decided: true, decision: granted, err: forbidden}, domain.AuditDeny, granted.Reason() + "; then: " + forbidden.Error()},
		{"granted, then not visible", auditFacts{decided: true, decision: granted, err: hidden}, domain.AuditDeny, granted.Reason() + "; then: " + hidden.Error() + " (exists but is not visible to the caller)"},
		{"granted, then bad input", auditFacts{decided: true, decision: granted, err: badInput}, domain.AuditAllow, granted.Reason() + "; then: " + badInput.Error()},
		{"granted, then refused by the handler", auditFacts{decided: true, decision: granted, refused: true, note: "tool call decided deny"}, domain.AuditDeny, granted.Reason() + "; tool call decided deny"},
		{"role lacks the permission", auditFacts{decided: true, decision: denied, err: &domain.AccessDenied{Decision: denied}}, domain.AuditDeny, denied.Reason()},
		{"unauthenticated", auditFacts{err: unauthenticated}, domain.AuditDeny, unauthenticated.Error()},
		{"no decision, no error", auditFacts{method: "GET", path: "/api/v2/nothing"}, domain.AuditDeny, "no route matches GET /api/v2/nothing"},
		{"note and key owner change", auditFacts{decided: true, decision: granted, note: "n", keyOwnerChange: "k"}, domain.AuditAllow, granted.Reason() + "; n; k"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := auditOutcome(tt.facts)
			if got != tt.want || reason != tt.wantReason {
				t.Errorf("got %s %q, want %s %q", got, reason, tt.want, tt.wantReason)
			}
		})
	}
}
