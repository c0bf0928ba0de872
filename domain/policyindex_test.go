package domain

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// linearEvaluate is the definition the index must agree with: every rule
// read in order, the strongest effect winning, the earliest of equals.
func linearEvaluate(rules []PolicyRule, s Subject, tool string) PolicyOutcome {
	about := func(r PolicyRule) bool {
		switch r.Scope {
		case ScopeRole:
			for _, x := range s.Roles {
				if string(x) == r.Value {
					return true
				}
			}
		case ScopeProject:
			for _, p := range s.Projects {
				if p == r.Value {
					return true
				}
			}
		case ScopeSubject:
			return r.Value == s.Subject
		}
		return false
	}
	var out PolicyOutcome
	for _, r := range rules {
		if r.Effect.rank() > out.Effect.rank() && about(r) && MatchTool(r.Tool, tool) {
			out = PolicyOutcome{Effect: r.Effect, Rule: r.ID}
		}
	}
	if out.Effect == "" {
		return PolicyOutcome{Effect: EffectDeny}
	}
	return out
}

// TestPolicyIndexAgreesWithReadingEveryRule compares the index with a
// linear read of the rules on random rule sets, subjects and tools, with
// patterns sharing prefixes, stars anywhere and exact names.
func TestPolicyIndexAgreesWithReadingEveryRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	patterns := []string{"*", "fs.*", "fs.read", "fs.write", "f*", "*.read", "git.*.force", "git.push", "g*t.p*", "fs.r*d", "**", "", "fs.", "FS.*", "Git.Push"}
	tools := []string{"fs.read", "fs.write", "fs.", "f", "git.push", "git.push.force", "git.x.force", "gt.p", "net.raw", "fs.rd", "Fs.Read", "GIT.push"}
	effects := []Effect{EffectAllow, EffectAsk, EffectDeny, "bogus"}
	scopes := []ScopeKind{ScopeRole, ScopeProject, ScopeSubject, "team"}
	values := []string{"USER", "ADMIN", "p1", "p2", "alice", "bob"}
	subjects := []Subject{
		{Subject: "alice", Roles: []Role{RoleUser}, Projects: []string{"p1"}},
		{Subject: "bob", Roles: []Role{RoleAdmin, RoleUser}, Projects: []string{"p1", "p2"}},
		{Subject: "carol"},
		{Roles: []Role{RoleUser}},
	}
	for round := 0; round < 300; round++ {
		rules := make([]PolicyRule, rng.IntN(40))
		for i := range rules {
			rules[i] = PolicyRule{ID: fmt.Sprintf("r%d", i), Effect: effects[rng.IntN(len(effects))],
				Tool: patterns[rng.IntN(len(patterns))], Scope: scopes[rng.IntN(len(scopes))], Value: values[rng.IntN(len(values))]}
		}
		ix := NewPolicyIndex(rules)
		for _, s := range subjects {
			for _, tool := range tools {
				if got, want := ix.Evaluate(s, tool), linearEvaluate(rules, s, tool); got != want {
					t.Fatalf("round %d, %+v, %s: index %+v, reading every rule %+v\nrules %+v", round, s, tool, got, want, rules)
				}
			}
		}
	}
}

func TestNilPolicyIndexDenies(t *testing.T) {
	var ix *PolicyIndex
	if got := ix.Evaluate(Subject{Subject: "alice", Roles: []Role{RoleUser}}, "fs.read"); got != (PolicyOutcome{Effect: EffectDeny}) {
		t.Errorf("nil index: got %+v, want deny without rule", got)
	}
	if ix.Len() != 0 {
		t.Errorf("nil index Len = %d", ix.Len())
	}
}

// manyRules is n rules about many subjects and tools, with one allow rule
// for USER on every tool so that a decision has something to find.
func manyRules(n int) []PolicyRule {
	rules := make([]PolicyRule, 0, n)
	rules = append(rules, PolicyRule{ID: "allow", Effect: EffectAllow, Tool: "*", Scope: ScopeRole, Value: "USER"})
	for i := 1; i < n; i++ {
		r := PolicyRule{ID: fmt.Sprintf("r%d", i), Effect: EffectDeny, Scope: ScopeSubject, Value: fmt.Sprintf("user%d", i%500)}
		switch i % 3 {
		case 0:
			r.Tool = fmt.Sprintf("tool%d.exec", i)
		case 1:
			r.Tool = fmt.Sprintf("srv%d.*", i)
		default:
			r.Tool, r.Scope, r.Value = fmt.Sprintf("tool%d.*", i), ScopeProject, fmt.Sprintf("p%d", i%50)
		}
		rules = append(rules, r)
	}
	return rules
}

// BenchmarkPolicyEvaluate: the policy step of a decision with 10, 1,000
// and 10,000 rules (the cost should not grow with them).
func BenchmarkPolicyEvaluate(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			ix := NewPolicyIndex(manyRules(n))
			s := Subject{Subject: "user7", Roles: []Role{RoleUser}, Projects: []string{"p7"}}
			b.ReportAllocs()
			for b.Loop() {
				if ix.Evaluate(s, "tool7.exec").Effect == "" {
					b.Fatal("no effect")
				}
			}
		})
	}
}
