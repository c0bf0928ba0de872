package domain

import (
	"testing"
	"time"
)

func TestDecideToolCall(t *testing.T) {
	authz, err := NewAuthorizer([]CustomRole{{Name: "VIEWER", Permissions: []Permission{PermSessionsRead}}})
	if err != nil {
		t.Fatal(err)
	}
	alice := Principal{Subject: "alice", Roles: []Role{RoleUser}}
	read := &Tool{Name: "fs.read", Server: "fs", ReadOnly: true}
	write := &Tool{Name: "fs.write", Server: "fs"}
	allowAll := PolicyRule{ID: "allow", Effect: EffectAllow, Tool: "*", Scope: ScopeRole, Value: "USER"}
	askWrite := PolicyRule{ID: "ask", Effect: EffectAsk, Tool: "fs.write", Scope: ScopeProject, Value: "p1"}
	denyPush := PolicyRule{ID: "deny", Effect: EffectDeny, Tool: "git.push", Scope: ScopeSubject, Value: "alice"}
	rules := NewPolicyIndex([]PolicyRule{allowAll, askWrite, denyPush})
	auto := Session{ID: "s1", Owner: "alice", Project: "p1", Mode: ModeAuto, State: SessionActive}
	withMode := func(m SessionMode) Session { s := auto; s.Mode = m; return s }
	personal := auto
	personal.Project = ""
	closed := auto
	closed.State = SessionClosed
	root := Agent{ID: "a0", Session: "s1"}
	narrow := Agent{ID: "a1", Session: "s1", Limits: Limits{Tools: []string{"fs.read"}}}
	roAgent := Agent{ID: "a2", Session: "s1", Limits: Limits{ReadOnly: true}}
	askAgent := Agent{ID: "a3", Session: "s1", Limits: Limits{Approval: true}}
	// alice through managed keys: one limited to fs.read, one without
	// toolcalls:write.
	keyed := func(perms []Permission, tools []string) Principal {
		p := alice
		p.Key = &KeyScope{ID: "aaaaaaaaaaaa", Owner: "alice", Permissions: NewPermissionSet(perms), Tools: tools}
		return p
	}
	readKey := keyed([]Permission{PermToolCallsWrite}, []string{"fs.read"})
	noCallsKey := keyed([]Permission{PermSessionsRead}, nil)

	tests := []struct {
		name       string
		in         ToolCallInput
		wantEffect Effect
		wantReason string
	}{
		{"allowed by policy", ToolCallInput{alice, auto, root, "fs.read", read, false, rules, nil, "", nil, time.Time{}}, EffectAllow, ReasonPolicyAllow},
		{"role lacks toolcalls:write", ToolCallInput{Principal{Subject: "v", Roles: []Role{"VIEWER"}}, auto, root, "fs.read", read, false, rules, nil, "", nil, time.Time{}}, EffectDeny, ReasonRoleLacksPermission},
		{"auditor never calls tools", ToolCallInput{Principal{Subject: "a", Roles: []Role{RoleAuditor}}, auto, root, "fs.read", read, false, rules, nil, "", nil, time.Time{}}, EffectDeny, ReasonRoleLacksPermission},
		{"closed session", ToolCallInput{alice, closed, root, "fs.read", read, false, rules, nil, "", nil, time.Time{}}, EffectDeny, ReasonSessionClosed},
		{"gateway refuses unregistered", ToolCallInput{alice, auto, root, "net.raw", nil, true, rules, nil, "", nil, time.Time{}}, EffectDeny, ReasonGatewayUnknown},
		{"gateway off: unregistered follows policy", ToolCallInput{alice, auto, root, "net.raw", nil, false, rules, nil, "", nil, time.Time{}}, EffectAllow, ReasonPolicyAllow},
		{"no rule denies", ToolCallInput{alice, auto, root, "fs.read", read, false, nil, nil, "", nil, time.Time{}}, EffectDeny, ReasonNoPolicyRule},
		{"project rule asks", ToolCallInput{alice, auto, root, "fs.write", write, false, rules, nil, "", nil, time.Time{}}, EffectAsk, ReasonPolicyAsk},
		{"project rule needs the project", ToolCallInput{alice, personal, root, "fs.write", write, false, rules, nil, "", nil, time.Time{}}, EffectAllow, ReasonPolicyAllow},
		{"deny wins", ToolCallInput{alice, auto, root, "git.push", nil, false, rules, nil, "", nil, time.Time{}}, EffectDeny, ReasonPolicyDeny},
		{"readonly mode refuses write tool", ToolCallInput{alice, withMode(ModeReadonly), root, "fs.write", write, false, rules, nil, "", nil, time.Time{}}, EffectDeny, ReasonModeReadonly},
		{"readonly mode runs read-only tool", ToolCallInput{alice, withMode(ModeReadonly), root, "fs.read", read, false, rules, nil, "", nil, time.Time{}}, EffectAllow, ReasonPolicyAllow},
		{"readonly mode: unregistered is not read-only", ToolCallInput{alice, withMode(ModeReadonly), root, "net.raw", nil, false, rules, nil, "", nil, time.Time{}}, EffectDeny, ReasonModeReadonly},
		{"unknown mode fails closed", ToolCallInput{alice, withMode("weird"), root, "fs.read", read, false, rules, nil, "", nil, time.Time{}}, EffectDeny, ReasonModeReadonly},
		{"ask mode asks", ToolCallInput{alice, withMode(ModeAsk), root, "fs.read", read, false, rules, nil, "", nil, time.Time{}}, EffectAsk, ReasonModeAsk},
		{"policy deny beats ask mode", ToolCallInput{alice, withMode(ModeAsk), root, "git.push", nil, false, rules, nil, "", nil, time.Time{}}, EffectDeny, ReasonPolicyDeny},
		{"policy ask comes before mode ask", ToolCallInput{alice, withMode(ModeAsk), root, "fs.write", write, false, rules, nil, "", nil, time.Time{}}, EffectAsk, ReasonPolicyAsk},
		{"agent tool set", ToolCallInput{alice, auto, narrow, "fs.write", write, false, rules, nil, "", nil, time.Time{}}, EffectDeny, ReasonAgentToolMissing},
		{"agent deny beats policy ask", ToolCallInput{alice, withMode(ModeAsk), narrow, "fs.write", write, false, rules, nil, "", nil, time.Time{}}, EffectDeny, ReasonAgentToolMissing},
		{"read-only agent", ToolCallInput{alice, auto, roAgent, "fs.write", write, false, rules, nil, "", nil, time.Time{}}, EffectDeny, ReasonAgentReadonly},
		{"read-only agent, read tool", ToolCallInput{alice, auto, roAgent, "fs.read", read, false, rules, nil, "", nil, time.Time{}}, EffectAllow, ReasonPolicyAllow},
		{"asking agent", ToolCallInput{alice, auto, askAgent, "fs.read", read, false, rules, nil, "", nil, time.Time{}}, EffectAsk, ReasonAgentAsk},
		{"managed key limited to fs.read calls it", ToolCallInput{readKey, auto, root, "fs.read", read, false, rules, nil, "", nil, time.Time{}}, EffectAllow, ReasonPolicyAllow},
		{"managed key limited to fs.read", ToolCallInput{readKey, auto, root, "fs.write", write, false, rules, nil, "", nil, time.Time{}}, EffectDeny, ReasonKeyTool},
		{"managed key without toolcalls:write", ToolCallInput{noCallsKey, auto, root, "fs.read", read, false, rules, nil, "", nil, time.Time{}}, EffectDeny, ReasonKeyLacksPermission},
	}
	for _, tt := range tests {
		got := authz.DecideToolCall(tt.in)
		if got.Effect != tt.wantEffect || got.Reason != tt.wantReason {
			t.Errorf("%s: got %s/%s (%s), want %s/%s", tt.name, got.Effect, got.Reason, got.Message, tt.wantEffect, tt.wantReason)
		}
		if got.Message == "" {
			t.Errorf("%s: empty message", tt.name)
		}
	}
}

func TestStatusOf(t *testing.T) {
	for e, want := range map[Effect]ToolCallStatus{EffectAllow: CallAllowed, EffectAsk: CallPending, EffectDeny: CallDenied, "": CallDenied} {
		if got := StatusOf(e); got != want {
			t.Errorf("StatusOf(%q) = %s, want %s", e, got, want)
		}
	}
}

// TestRecheckApproval: a pending call is approved later; a session made
// stricter in the meantime (a LEAD's emergency switch to readonly), the
// gateway switched on, or a closed session must win over the approval.
func TestRecheckApproval(t *testing.T) {
	read := &Tool{Name: "fs.read", Server: "fs", ReadOnly: true}
	write := &Tool{Name: "fs.write", Server: "fs"}
	sess := func(m SessionMode, st SessionState) Session {
		return Session{ID: "s1", Owner: "alice", Mode: m, State: st}
	}
	root := Agent{ID: "a0", Session: "s1"}
	roAgent := Agent{ID: "a2", Session: "s1", Limits: Limits{ReadOnly: true}}
	alice := Principal{Subject: "alice"} // the requester; a call keeps no roles
	inProject := sess(ModeAsk, SessionActive)
	inProject.Project = "p1"
	tests := []struct {
		name       string
		in         ToolCallInput
		wantReason string // "" when the approval may go ahead
	}{
		{"ask mode: approvable", ToolCallInput{Session: sess(ModeAsk, SessionActive), Agent: root, Tool: "fs.write", Registered: write}, ""},
		{"now readonly: write tool refused", ToolCallInput{Session: sess(ModeReadonly, SessionActive), Agent: root, Tool: "fs.write", Registered: write}, ReasonModeReadonly},
		{"now readonly: read-only tool approvable", ToolCallInput{Session: sess(ModeReadonly, SessionActive), Agent: root, Tool: "fs.read", Registered: read}, ""},
		{"gateway now on: unregistered refused", ToolCallInput{Session: sess(ModeAsk, SessionActive), Agent: root, Tool: "net.raw", Gateway: true}, ReasonGatewayUnknown},
		{"session closed", ToolCallInput{Session: sess(ModeAsk, SessionClosed), Agent: root, Tool: "fs.read", Registered: read}, ReasonSessionClosed},
		{"read-only agent: write tool refused", ToolCallInput{Session: sess(ModeAsk, SessionActive), Agent: roAgent, Tool: "fs.write", Registered: write}, ReasonAgentReadonly},
		{"deny rule for the requester since", ToolCallInput{Principal: alice, Session: sess(ModeAsk, SessionActive), Agent: root, Tool: "fs.write", Registered: write,
			Policy: NewPolicyIndex([]PolicyRule{{ID: "r1", Effect: EffectDeny, Tool: "fs.*", Scope: ScopeSubject, Value: "alice"}})}, ReasonPolicyDeny},
		{"deny rule for the project since", ToolCallInput{Principal: alice, Session: inProject, Agent: root, Tool: "fs.write", Registered: write,
			Policy: NewPolicyIndex([]PolicyRule{{ID: "r2", Effect: EffectDeny, Tool: "*", Scope: ScopeProject, Value: "p1"}})}, ReasonPolicyDeny},
		{"deny rule for a role is not re-checked", ToolCallInput{Principal: alice, Session: sess(ModeAsk, SessionActive), Agent: root, Tool: "fs.write", Registered: write,
			Policy: NewPolicyIndex([]PolicyRule{{ID: "r3", Effect: EffectDeny, Tool: "*", Scope: ScopeRole, Value: "USER"}})}, ""},
		{"deny rule for another tool", ToolCallInput{Principal: alice, Session: sess(ModeAsk, SessionActive), Agent: root, Tool: "fs.write", Registered: write,
			Policy: NewPolicyIndex([]PolicyRule{{ID: "r4", Effect: EffectDeny, Tool: "git.*", Scope: ScopeSubject, Value: "alice"}})}, ""},
		{"allow rule changes nothing", ToolCallInput{Principal: alice, Session: sess(ModeAsk, SessionActive), Agent: root, Tool: "fs.write", Registered: write,
			Policy: NewPolicyIndex([]PolicyRule{{ID: "r5", Effect: EffectAllow, Tool: "*", Scope: ScopeSubject, Value: "alice"}})}, ""},
	}
	for _, tt := range tests {
		got := RecheckApproval(tt.in)
		switch {
		case tt.wantReason == "" && got != nil:
			t.Errorf("%s: refused %s (%s), want approvable", tt.name, got.Reason, got.Message)
		case tt.wantReason != "" && (got == nil || got.Effect != EffectDeny || got.Reason != tt.wantReason):
			t.Errorf("%s: got %+v, want deny %s", tt.name, got, tt.wantReason)
		}
	}
}
