package policycel

import (
	"fmt"
	"testing"

	"github.com/agentauth/agentauth/domain"
)

// conditionalRules is n rules about many subjects and tools, each with a
// condition of its own, and two rules deciding the benchmark's call: an
// allow for USER whose condition holds, and a deny whose condition does
// not.
func conditionalRules(n int) []domain.PolicyRule {
	rules := []domain.PolicyRule{
		{ID: "allow", Effect: domain.EffectAllow, Tool: "*", Scope: domain.ScopeRole, Value: "USER", When: `args.path.startsWith("/srv/public/") && agent.depth <= 1`},
		{ID: "deny", Effect: domain.EffectDeny, Tool: "tool7.*", Scope: domain.ScopeRole, Value: "USER", When: `args.env == "prod"`},
	}
	for i := len(rules); i < n; i++ {
		r := domain.PolicyRule{ID: fmt.Sprintf("r%d", i), Effect: domain.EffectDeny, Scope: domain.ScopeSubject,
			Value: fmt.Sprintf("user%d", i%500), When: fmt.Sprintf(`size(args.recipients) > %d`, i)}
		switch i % 3 {
		case 0:
			r.Tool = fmt.Sprintf("tool%d.exec", i)
		case 1:
			r.Tool = fmt.Sprintf("srv%d.*", i)
		default:
			r.Tool, r.Scope, r.Value = fmt.Sprintf("tool%d.*", i), domain.ScopeProject, fmt.Sprintf("p%d", i%50)
		}
		rules = append(rules, r)
	}
	return rules
}

// BenchmarkConditionalDecision: the policy step of a decision when every
// rule has a condition, at 10, 1,000 and 10,000 rules: it evaluates only
// the conditions of the rules about the caller and the tool, so its cost
// does not grow with the rules.
func BenchmarkConditionalDecision(b *testing.B) {
	args := []byte(`{"env":"dev","path":"/srv/public/report.txt","recipients":["a@example.com"]}`)
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			ix := domain.NewPolicyIndexWith(conditionalRules(n), Compile)
			s := domain.Subject{Subject: "user7", Roles: []domain.Role{domain.RoleUser}, Projects: []string{"p7"}}
			b.ReportAllocs()
			for b.Loop() {
				f := domain.CallFacts{Tool: "tool7.exec", Arguments: args, Subject: "user7", Depth: 1}
				if out := ix.EvaluateCall(s, "tool7.exec", &f); out.Rule != "allow" {
					b.Fatalf("decided %+v", out)
				}
			}
		})
	}
}

// BenchmarkCompile: checking and compiling one condition, as a rule's
// creation and a rebuild of the rules do.
func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(`args.path.startsWith("/srv/public/") && agent.depth <= 1`); err != nil {
			b.Fatal(err)
		}
	}
}
