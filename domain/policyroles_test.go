package domain

import (
	"slices"
	"testing"
	"time"
)

// TestCustomRolesMeetRulesOfTheRoleTheyExtend: a deny rule written for USER
// also binds a custom role defined as "USER plus more".
func TestCustomRolesMeetRulesOfTheRoleTheyExtend(t *testing.T) {
	authz, err := NewAuthorizer([]CustomRole{
		{Name: "SRE", Extends: RoleUser, Permissions: []Permission{PermMetricsRead}},
		{Name: "BOT", Permissions: []Permission{PermToolCallsWrite, PermSessionsRead}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		roles, want []Role
	}{
		{[]Role{"SRE"}, []Role{"SRE", RoleUser}},
		{[]Role{"SRE", RoleUser}, []Role{"SRE", RoleUser}},
		{[]Role{"BOT"}, []Role{"BOT"}},
		{[]Role{RoleLead}, []Role{RoleLead}},
		{nil, nil},
	}
	for _, tt := range tests {
		if got := authz.PolicyRoles(tt.roles); !slices.Equal(got, tt.want) {
			t.Errorf("PolicyRoles(%v) = %v, want %v", tt.roles, got, tt.want)
		}
	}
	in := []Role{"SRE"}
	authz.PolicyRoles(in)
	if !slices.Equal(in, []Role{"SRE"}) {
		t.Errorf("PolicyRoles changed its argument: %v", in)
	}

	rules := NewPolicyIndex([]PolicyRule{
		{ID: "allow", Effect: EffectAllow, Tool: "*", Scope: ScopeRole, Value: "SRE"},
		{ID: "deny-users", Effect: EffectDeny, Tool: "shell.*", Scope: ScopeRole, Value: "USER"},
	})
	sre := Principal{Subject: "sam", Roles: []Role{"SRE"}}
	session := Session{ID: "s1", Owner: "sam", Mode: ModeAuto, State: SessionActive}
	got := authz.DecideToolCall(ToolCallInput{sre, session, Agent{ID: "a0", Session: "s1"}, "shell.exec", nil, false, rules, nil, "", nil, time.Time{}})
	if got.Effect != EffectDeny || got.Reason != ReasonPolicyDeny {
		t.Errorf("SRE (extends USER) calling shell.exec: got %s/%s, want deny by the USER rule", got.Effect, got.Reason)
	}
}
