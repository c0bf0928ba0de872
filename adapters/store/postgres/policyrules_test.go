package postgres_test

import (
	"testing"

	"github.com/agentauth/agentauth/adapters/store/postgres"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports/porttest"
)

// TestPolicyChangeOnOneInstanceDecidesOnTheOtherAtOnce: two instances on one
// PostgreSQL database, each with its rules compiled in memory. A rule
// written or deleted through A is in force on B for the very next decision.
func TestPolicyChangeOnOneInstanceDecidesOnTheOtherAtOnce(t *testing.T) {
	stores := sharedStores[*postgres.Store](t, 2)
	a, b := stores[0], stores[1]
	rulesA, rulesB := app.NewPolicyRules(a), app.NewPolicyRules(b)
	ctx := porttest.Context(t)
	uma := domain.Subject{Subject: "uma", Roles: []domain.Role{domain.RoleUser}}
	decide := func(rules *app.PolicyRules) domain.PolicyOutcome {
		t.Helper()
		ix, err := rules.Index(ctx)
		if err != nil {
			t.Fatalf("Index: %v", err)
		}
		return ix.Evaluate(uma, "shell.exec")
	}
	allow := domain.PolicyRule{ID: "allow", Effect: domain.EffectAllow, Tool: "*", Scope: domain.ScopeRole, Value: "USER"}
	deny := domain.PolicyRule{ID: "deny", Effect: domain.EffectDeny, Tool: "shell.*", Scope: domain.ScopeSubject, Value: "uma"}
	steps := []struct {
		name   string
		change func() error
		want   domain.PolicyOutcome
	}{
		{"no rules", func() error { return nil }, domain.PolicyOutcome{Effect: domain.EffectDeny}},
		{"allow written on A", func() error { return a.CreatePolicy(ctx, allow) }, domain.PolicyOutcome{Effect: domain.EffectAllow, Rule: "allow"}},
		{"deny written on B", func() error { return b.CreatePolicy(ctx, deny) }, domain.PolicyOutcome{Effect: domain.EffectDeny, Rule: "deny"}},
		{"deny deleted on A", func() error { return a.DeletePolicy(ctx, "deny") }, domain.PolicyOutcome{Effect: domain.EffectAllow, Rule: "allow"}},
		{"allow deleted on B", func() error { return b.DeletePolicy(ctx, "allow") }, domain.PolicyOutcome{Effect: domain.EffectDeny}},
	}
	for _, st := range steps {
		if err := st.change(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		for name, rules := range map[string]*app.PolicyRules{"A": rulesA, "B": rulesB} {
			if got := decide(rules); got != st.want {
				t.Errorf("%s: decision on %s = %+v, want %+v", st.name, name, got, st.want)
			}
		}
	}
}
