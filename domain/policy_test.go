package domain

import (
	"errors"
	"testing"
)

func TestMatchTool(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"fs.read", "fs.read", true},
		{"fs.read", "fs.write", false},
		{"fs.*", "fs.read", true},
		{"fs.*", "fs.", true},
		{"fs.*", "fsx", false},
		{"*", "anything/at:all", true},
		{"*.read", "github.read", true},
		{"*.read", "github.write", false},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
		{"a*b", "abab", true},
		{"**", "", true},
		{"", "", true},
		{"", "x", false},
		{"x", "", false},
		{"fs.read*", "fs.read", true},
	}
	for _, tt := range tests {
		if got := MatchTool(tt.pattern, tt.name); got != tt.want {
			t.Errorf("MatchTool(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

func TestValidateRule(t *testing.T) {
	ok := PolicyRule{Effect: EffectAllow, Tool: "fs.*", Scope: ScopeRole, Value: "USER"}
	tests := []struct {
		name   string
		mutate func(*PolicyRule)
		ok     bool
	}{
		{"valid role rule", func(*PolicyRule) {}, true},
		{"star only", func(r *PolicyRule) { r.Tool = "*" }, true},
		{"project", func(r *PolicyRule) { r.Scope, r.Value = ScopeProject, "prj_1" }, true},
		{"subject", func(r *PolicyRule) { r.Scope, r.Value = ScopeSubject, "alice" }, true},
		{"bad effect", func(r *PolicyRule) { r.Effect = "maybe" }, false},
		{"empty tool", func(r *PolicyRule) { r.Tool = "" }, false},
		{"bad tool char", func(r *PolicyRule) { r.Tool = "fs read" }, false},
		{"bad role", func(r *PolicyRule) { r.Value = "user" }, false},
		{"empty project", func(r *PolicyRule) { r.Scope, r.Value = ScopeProject, "" }, false},
		{"bad scope", func(r *PolicyRule) { r.Scope = "team" }, false},
	}
	for _, tt := range tests {
		r := ok
		tt.mutate(&r)
		err := ValidateRule(r)
		if got := err == nil; got != tt.ok {
			t.Errorf("%s: ValidateRule err = %v, want ok %v", tt.name, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: got %v, want ErrInvalidInput", tt.name, err)
		}
	}
}

func TestPolicyIndexDenyWinsAndNoRuleDenies(t *testing.T) {
	alice := Subject{Subject: "alice", Roles: []Role{RoleUser}, Projects: []string{"p1"}}
	allowRole := PolicyRule{ID: "r1", Effect: EffectAllow, Tool: "*", Scope: ScopeRole, Value: "USER"}
	askProject := PolicyRule{ID: "r2", Effect: EffectAsk, Tool: "git.*", Scope: ScopeProject, Value: "p1"}
	denySubject := PolicyRule{ID: "r3", Effect: EffectDeny, Tool: "git.push", Scope: ScopeSubject, Value: "alice"}
	denyOther := PolicyRule{ID: "r4", Effect: EffectDeny, Tool: "*", Scope: ScopeSubject, Value: "bob"}
	denyLead := PolicyRule{ID: "r5", Effect: EffectDeny, Tool: "*", Scope: ScopeRole, Value: "LEAD"}
	denyP2 := PolicyRule{ID: "r6", Effect: EffectDeny, Tool: "*", Scope: ScopeProject, Value: "p2"}
	odd := PolicyRule{ID: "r7", Effect: EffectDeny, Tool: "*", Scope: "team", Value: "alice"}
	all := []PolicyRule{allowRole, askProject, denySubject, denyOther, denyLead, denyP2, odd}
	tests := []struct {
		name  string
		rules []PolicyRule
		tool  string
		want  PolicyOutcome
	}{
		{"no rules: deny", nil, "fs.read", PolicyOutcome{Effect: EffectDeny}},
		{"allow", all, "fs.read", PolicyOutcome{Effect: EffectAllow, Rule: "r1"}},
		{"ask beats allow", all, "git.pull", PolicyOutcome{Effect: EffectAsk, Rule: "r2"}},
		{"deny beats ask", all, "git.push", PolicyOutcome{Effect: EffectDeny, Rule: "r3"}},
		{"order does not matter", []PolicyRule{denySubject, askProject, allowRole}, "git.push", PolicyOutcome{Effect: EffectDeny, Rule: "r3"}},
		{"other subjects' rules ignored", []PolicyRule{denyOther, denyLead, denyP2, odd}, "fs.read", PolicyOutcome{Effect: EffectDeny}},
	}
	for _, tt := range tests {
		if got := NewPolicyIndex(tt.rules).Evaluate(alice, tt.tool); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestValidateName(t *testing.T) {
	long := make([]byte, maxNameLen+1)
	for i := range long {
		long[i] = 'a'
	}
	for _, tt := range []struct {
		name string
		ok   bool
	}{{"github/create_issue", true}, {"A-Z.0:9", true}, {"", false}, {string(long), false}, {"ü", false}, {"a b", false}} {
		if got := ValidateName("tool", tt.name) == nil; got != tt.ok {
			t.Errorf("ValidateName(%q) ok = %v, want %v", tt.name, got, tt.ok)
		}
	}
}
