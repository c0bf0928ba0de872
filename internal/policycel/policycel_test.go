package policycel

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
)

func facts() *domain.CallFacts {
	return &domain.CallFacts{Tool: "fs.read", Server: "fs",
		Arguments:   []byte(`{"count":3,"dry_run":true,"env":"staging","path":"/srv/public/a.txt","recipients":["a@x","b@x"]}`),
		SessionMode: domain.ModeAuto, Project: "p1", Depth: 1, Chain: []string{"alice", "agent_1", "agent_2"},
		Subject: "alice", Roles: []domain.Role{domain.RoleUser, "SRE"}, Now: time.Date(2026, 11, 28, 14, 30, 0, 0, time.UTC)}
}

// TestConditions: every variable, as the examples of docs/api.md use them.
func TestConditions(t *testing.T) {
	for _, tc := range []struct {
		when string
		want domain.ConditionResult
	}{
		{`args.path.startsWith("/srv/public/")`, domain.ConditionTrue},
		{`args.env != "prod"`, domain.ConditionTrue},
		{`agent.depth <= 1`, domain.ConditionTrue},
		{`agent.depth == 0`, domain.ConditionFalse},
		{`size(args.recipients) <= 5`, domain.ConditionTrue},
		{`size(args.recipients) <= 1`, domain.ConditionFalse},
		{`args.count == 3 && args.count < 4.5`, domain.ConditionTrue},
		{`args.dry_run == true`, domain.ConditionTrue},
		{`has(args.force) && args.force == true`, domain.ConditionFalse},
		{`tool == "fs.read" && server == "fs"`, domain.ConditionTrue},
		{`session.mode == "auto" && session.project == "p1"`, domain.ConditionTrue},
		{`agent.chain[0] == subject && agent.chain[2] == "agent_2" && size(agent.chain) == agent.depth + 2`, domain.ConditionTrue},
		{`subject == "alice"`, domain.ConditionTrue},
		{`"SRE" in roles && !("ADMIN" in roles)`, domain.ConditionTrue},
		{`now.getHours("UTC") >= 9 && now.getHours("UTC") < 17`, domain.ConditionTrue},
		{`now < timestamp("2026-01-01T00:00:00Z")`, domain.ConditionFalse},
		{`args.path.lowerAscii().matches("^/srv/(public|shared)/")`, domain.ConditionTrue},
		{`args.recipients.all(r, r.endsWith("@x"))`, domain.ConditionTrue},
	} {
		c, err := Compile(tc.when)
		if err != nil {
			t.Errorf("%s: %v", tc.when, err)
			continue
		}
		if got, err := c.Eval(facts()); err != nil || got != tc.want {
			t.Errorf("%s: got %v, %v; want %v", tc.when, got, err, tc.want)
		}
	}
}

// TestCompileErrors: refused at creation, with the position of the error.
func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		when         string
		line, column int
		says         string
	}{
		{`argz.path == "x"`, 1, 1, "undeclared reference to 'argz'"},
		{`session.mod == "auto"`, 1, 1, "undeclared reference to 'session'"},
		{`agent.depth <= "1"`, 1, 13, "no matching overload"},
		{`args.path`, 1, 1, "must be true or false"},
		{`tool + 1`, 1, 6, "no matching overload"},
		{"tool == \"a\" &&\n  (args.x ==", 2, 13, "Syntax error"},
		{``, 1, 1, "empty"},
		{`size(roles) <= 5 ||`, 1, 20, "Syntax error"},
	} {
		_, err := Compile(tc.when)
		var ce *domain.ConditionError
		if !errors.As(err, &ce) || !errors.Is(err, domain.ErrInvalidInput) {
			t.Errorf("%q: got %v, want a ConditionError (invalid input)", tc.when, err)
			continue
		}
		if ce.Line != tc.line || ce.Column != tc.column || !strings.Contains(ce.Message, tc.says) {
			t.Errorf("%q: got %d:%d %q, want %d:%d saying %q", tc.when, ce.Line, ce.Column, ce.Message, tc.line, tc.column, tc.says)
		}
	}
}

// TestEvaluationErrors: what cannot be evaluated is an error (its rule
// then denies), never true.
func TestEvaluationErrors(t *testing.T) {
	long := make([]string, 2000)
	for i := range long {
		long[i] = fmt.Sprintf("%q", strings.Repeat("x", 40))
	}
	for _, tc := range []struct {
		when, args, says string
	}{
		{`args.missing == "x"`, `{}`, "no such key"},
		{`args.env.startsWith("p")`, `{"env":3}`, "no such overload"},
		{`size(args.recipients) <= 5`, `{"recipients":7}`, "no such overload"},
		{`args.list.all(a, args.list.all(b, a + b != ""))`, `{"list":[` + strings.Join(long, ",") + `]}`, "cost limit exceeded"},
	} {
		c, err := Compile(tc.when)
		if err != nil {
			t.Fatalf("%s: %v", tc.when, err)
		}
		f := facts()
		f.Arguments = []byte(tc.args)
		got, err := c.Eval(f)
		if err == nil || !strings.Contains(err.Error(), tc.says) || got != domain.ConditionFalse {
			t.Errorf("%s with %s: got %v, %v; want an error saying %q", tc.when, tc.args, got, err, tc.says)
		}
	}
}

// TestUnknownArguments: when listing, the arguments are unknown and the
// rest is known.
func TestUnknownArguments(t *testing.T) {
	for _, tc := range []struct {
		when string
		want domain.ConditionResult
	}{
		{`args.env != "prod"`, domain.ConditionUnknown},
		{`agent.depth <= 1 && args.env != "prod"`, domain.ConditionUnknown},
		{`agent.depth == 0 && args.env != "prod"`, domain.ConditionFalse},
		{`agent.depth == 1 || args.env != "prod"`, domain.ConditionTrue},
		{`tool == "fs.read"`, domain.ConditionTrue},
	} {
		c, err := Compile(tc.when)
		if err != nil {
			t.Fatal(err)
		}
		f := facts()
		f.Arguments = nil
		if got, err := c.Eval(f); err != nil || got != tc.want {
			t.Errorf("%s: got %v, %v; want %v", tc.when, got, err, tc.want)
		}
	}
}

// TestIndexDecidesWithConditions: the strongest rule whose condition holds
// decides; an error denies; a broken stored condition denies.
func TestIndexDecidesWithConditions(t *testing.T) {
	rules := []domain.PolicyRule{
		{ID: "allow", Effect: domain.EffectAllow, Tool: "fs.*", Scope: domain.ScopeRole, Value: "USER", When: `args.path.startsWith("/srv/public/")`},
		{ID: "deny-prod", Effect: domain.EffectDeny, Tool: "fs.*", Scope: domain.ScopeRole, Value: "USER", When: `args.env == "prod"`},
		{ID: "ask-many", Effect: domain.EffectAsk, Tool: "mail.send", Scope: domain.ScopeRole, Value: "USER", When: `size(args.recipients) > 5`},
		{ID: "allow-mail", Effect: domain.EffectAllow, Tool: "mail.send", Scope: domain.ScopeRole, Value: "USER"},
		{ID: "broken", Effect: domain.EffectAllow, Tool: "net.get", Scope: domain.ScopeRole, Value: "USER", When: `nonsense(`},
	}
	ix := domain.NewPolicyIndexWith(rules, Compile)
	s := domain.Subject{Subject: "alice", Roles: []domain.Role{domain.RoleUser}}
	for _, tc := range []struct {
		tool, args string
		effect     domain.Effect
		rule       string
		err        bool
	}{
		{"fs.read", `{"env":"dev","path":"/srv/public/x"}`, domain.EffectAllow, "allow", false},
		{"fs.read", `{"env":"prod","path":"/srv/public/x"}`, domain.EffectDeny, "deny-prod", false},
		{"fs.read", `{"env":"dev","path":"/etc/passwd"}`, domain.EffectDeny, "", false},
		{"fs.read", `{"path":"/srv/public/x"}`, domain.EffectDeny, "deny-prod", true},
		{"mail.send", `{"recipients":[1,2,3,4,5,6]}`, domain.EffectAsk, "ask-many", false},
		{"mail.send", `{"recipients":[1]}`, domain.EffectAllow, "allow-mail", false},
		{"net.get", `{}`, domain.EffectDeny, "broken", true},
	} {
		f := facts()
		f.Tool, f.Arguments = tc.tool, []byte(tc.args)
		got := ix.EvaluateCall(s, tc.tool, f)
		if got.Effect != tc.effect || got.Rule != tc.rule || (got.Error != "") != tc.err {
			t.Errorf("%s %s: got %+v; want %s by %q (error %v)", tc.tool, tc.args, got, tc.effect, tc.rule, tc.err)
		}
	}
	// Listing (nothing known of the call): a conditional allow may hold,
	// a conditional deny is taken not to.
	if got := ix.Evaluate(s, "fs.read"); got.Effect != domain.EffectAllow || !got.Maybe {
		t.Errorf("listing fs.read: got %+v, want a maybe allow", got)
	}
}
