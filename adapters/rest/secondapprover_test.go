package rest

import (
	"testing"

	"github.com/agentauth/agentauth/domain"
)

// TestSecondApprover: a tool registered with second_approver needs its
// calls approved by someone other than the session's owner; rejecting
// stays open to the owner.
func TestSecondApprover(t *testing.T) {
	h := axNew(t)
	_, session, agent := axSession(t, h, "auto")
	h.must(t, 201, "adm", "POST", "/api/v2/tools", `{"name":"fs.shell","server":"fs","second_approver":true}`)
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"ask","tool":"fs.*","scope":"role","value":"USER"}`)
	tests := []struct {
		tool, approver string
		status         int
		reason         string
	}{
		{"fs.shell", "uma", 403, domain.ReasonSecondApprover},
		{"fs.shell", "lea", 200, ""},
		{"fs.write", "uma", 200, ""},
	}
	for _, tt := range tests {
		_, _, id := decide(t, h, "uma", session, agent, tt.tool)
		r := h.do(t, tt.approver, "POST", "/api/v2/sessions/"+session+"/tool-calls/"+id+"/approve", "")
		if r.status != tt.status || (tt.reason != "" && r.errorOf(t).ReasonCode != tt.reason) {
			t.Errorf("%s approved by %s: %d %s, want %d %s", tt.tool, tt.approver, r.status, r.body, tt.status, tt.reason)
		}
	}
	_, _, id := decide(t, h, "uma", session, agent, "fs.shell")
	h.must(t, 200, "uma", "POST", "/api/v2/sessions/"+session+"/tool-calls/"+id+"/reject", "")
}
