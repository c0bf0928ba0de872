package domain

import "fmt"

// PolicyIndex is the policy rules compiled for decisions: grouped by whom
// they are about (a role, a project, a subject), then by tool pattern, exact
// names in a map and wildcard patterns in a prefix tree keyed by the
// characters before their first '*'. A decision touches only the rules of
// the caller's roles, projects and subject whose pattern can match the tool,
// so its cost does not grow with the rules about others or other tools.
// An index is immutable once built; a nil index holds no rules.
type PolicyIndex struct {
	scopes     map[scopeKey]*toolIndex
	byID       map[string]*indexedRule
	rules      int
	conditions int
}

type scopeKey struct {
	kind  ScopeKind
	value string
}

// indexedRule is a rule with its position in the list the index was built
// from: of equally strong matches, the earliest decides, as when the list
// is read in order.
type indexedRule struct {
	pos  int
	rule PolicyRule
	// pattern is the rule's tool pattern in canonical form (asciiLower, as
	// CanonicalToolPattern: rules stored before names were canonical are
	// found for every spelling, as MatchTool finds them).
	pattern string
	// cond is the rule's compiled condition; nil: none, the rule holds.
	cond Condition
}

type toolIndex struct {
	exact map[string][]*indexedRule
	wild  prefixNode
}

// prefixNode holds the wildcard rules whose literal prefix is the path from
// the root to the node.
type prefixNode struct {
	rules []*indexedRule
	next  map[byte]*prefixNode
}

// NewPolicyIndex compiles rules (in the order a decision would read them)
// that have no condition; see NewPolicyIndexWith.
func NewPolicyIndex(rules []PolicyRule) *PolicyIndex {
	return NewPolicyIndexWith(rules, nil)
}

// NewPolicyIndexWith compiles rules (in the order a decision would read
// them), their conditions with compile. Rules with an unknown scope are
// about nobody, and rules with an unknown effect say nothing: both are
// left out. A condition that does not compile (or any, when compile is
// nil) fails every evaluation: its rule denies.
func NewPolicyIndexWith(rules []PolicyRule, compile ConditionCompiler) *PolicyIndex {
	ix := &PolicyIndex{scopes: make(map[scopeKey]*toolIndex), byID: make(map[string]*indexedRule, len(rules)), rules: len(rules)}
	for i, r := range rules {
		switch r.Scope {
		case ScopeRole, ScopeProject, ScopeSubject:
		default:
			continue
		}
		if r.Effect.rank() == 0 {
			continue
		}
		k := scopeKey{r.Scope, r.Value}
		t := ix.scopes[k]
		if t == nil {
			t = &toolIndex{exact: make(map[string][]*indexedRule)}
			ix.scopes[k] = t
		}
		ir := &indexedRule{pos: i, rule: r, pattern: asciiLower(r.Tool)}
		if r.When != "" {
			ix.conditions++
			ir.cond = brokenCondition{fmt.Errorf("policy rule %s: conditions cannot be evaluated here", r.ID)}
			if compile != nil {
				c, err := compile(r.When)
				if err != nil {
					c = brokenCondition{fmt.Errorf("policy rule %s: its condition does not compile: %w", r.ID, err)}
				}
				ir.cond = c
			}
		}
		t.add(ir)
		ix.byID[r.ID] = ir
	}
	return ix
}

// Rule is the indexed rule id.
func (ix *PolicyIndex) Rule(id string) (PolicyRule, bool) {
	if ix == nil || id == "" {
		return PolicyRule{}, false
	}
	r, ok := ix.byID[id]
	if !ok {
		return PolicyRule{}, false
	}
	return r.rule, true
}

func (t *toolIndex) add(r *indexedRule) {
	star := -1
	for i := 0; i < len(r.pattern); i++ {
		if r.pattern[i] == '*' {
			star = i
			break
		}
	}
	if star < 0 {
		t.exact[r.pattern] = append(t.exact[r.pattern], r)
		return
	}
	n := &t.wild
	for i := 0; i < star; i++ {
		c := r.pattern[i]
		if n.next == nil {
			n.next = make(map[byte]*prefixNode)
		}
		child := n.next[c]
		if child == nil {
			child = &prefixNode{}
			n.next[c] = child
		}
		n = child
	}
	n.rules = append(n.rules, r)
}

// Len is the number of rules the index was built from.
func (ix *PolicyIndex) Len() int {
	if ix == nil {
		return 0
	}
	return ix.rules
}

// Conditions is the number of rules with a condition.
func (ix *PolicyIndex) Conditions() int {
	if ix == nil {
		return 0
	}
	return ix.conditions
}

// candidates are the rules matching one decision, strongest first.
type candidates []*indexedRule

// stronger orders two matching rules: the stronger effect first, of equals
// the earlier rule.
func stronger(a, b *indexedRule) bool {
	ra, rb := a.rule.Effect.rank(), b.rule.Effect.rank()
	return ra > rb || ra == rb && a.pos < b.pos
}

// insert keeps c ordered (a decision matches few rules: insertion is
// cheaper than a sort's setup).
func (c candidates) insert(r *indexedRule) candidates {
	c = append(c, r)
	for i := len(c) - 1; i > 0 && stronger(c[i], c[i-1]); i-- {
		c[i], c[i-1] = c[i-1], c[i]
	}
	return c
}

// scan adds every rule of t whose pattern matches name (canonical form)
// and that keep accepts.
func (t *toolIndex) scan(name string, keep func(PolicyRule) bool, c candidates) candidates {
	for _, r := range t.exact[name] {
		if keep(r.rule) {
			c = c.insert(r)
		}
	}
	n := &t.wild
	for i := 0; ; i++ {
		for _, r := range n.rules {
			if keep(r.rule) && MatchTool(r.pattern, name) {
				c = c.insert(r)
			}
		}
		if i == len(name) || n.next == nil {
			return c
		}
		if n = n.next[name[i]]; n == nil {
			return c
		}
	}
}

// matching are the rules about s matching tool that keep accepts,
// strongest first, in buf's room when they fit.
func (ix *PolicyIndex) matching(s Subject, tool string, keep func(PolicyRule) bool, buf candidates) candidates {
	c := buf[:0]
	if ix == nil || len(ix.scopes) == 0 {
		return c
	}
	name := asciiLower(tool)
	visit := func(k scopeKey) {
		if t := ix.scopes[k]; t != nil {
			c = t.scan(name, keep, c)
		}
	}
	for _, r := range s.Roles {
		visit(scopeKey{ScopeRole, string(r)})
	}
	for _, p := range s.Projects {
		visit(scopeKey{ScopeProject, p})
	}
	if s.Subject != "" {
		visit(scopeKey{ScopeSubject, s.Subject})
	}
	return c
}

func anyRule(PolicyRule) bool { return true }

// RuleStep is what one matching rule said in a decision (RuleSteps lists
// them for an explanation): whether its condition held.
type RuleStep struct {
	Rule PolicyRule
	// Result: "decides" (it holds and is the strongest that does), "holds"
	// and "unknown" (it may hold: listing, the arguments unknown), "does
	// not hold", "error" (Error says why: it denies), "not reached" (a
	// stronger rule decided first).
	Result string
	Error  string
}

// decide reads the candidates strongest first: the first whose condition
// holds decides (with facts nil nothing is known of the call: a
// condition may hold for allow and ask, and is taken not to for deny, so
// that a listing shows what some call may do). A condition that cannot be
// evaluated denies. steps, when not nil, gets each candidate's step.
func decide(c candidates, f *CallFacts, steps *[]RuleStep) PolicyOutcome {
	out := PolicyOutcome{Effect: EffectDeny}
	decided := false
	for _, r := range c {
		if decided {
			if steps != nil {
				*steps = append(*steps, RuleStep{Rule: r.rule, Result: "not reached"})
			}
			continue
		}
		res, err := ConditionTrue, error(nil)
		if r.cond != nil {
			if f == nil {
				res = ConditionUnknown
			} else {
				res, err = r.cond.Eval(f)
			}
		}
		step := RuleStep{Rule: r.rule}
		switch {
		case err != nil:
			out, decided = PolicyOutcome{Effect: EffectDeny, Rule: r.rule.ID, When: r.rule.When, Error: err.Error()}, true
			step.Result, step.Error = "error", err.Error()
		case res == ConditionTrue || res == ConditionUnknown && r.rule.Effect != EffectDeny:
			out, decided = PolicyOutcome{Effect: r.rule.Effect, Rule: r.rule.ID, When: r.rule.When, Maybe: res == ConditionUnknown}, true
			step.Result = "decides"
		case res == ConditionUnknown:
			step.Result = "unknown"
		default:
			step.Result = "does not hold"
		}
		if steps != nil {
			*steps = append(*steps, step)
		}
	}
	return out
}

// Evaluate applies the rules that match tool and are about s, knowing
// nothing of the call (see EvaluateCall with facts nil).
func (ix *PolicyIndex) Evaluate(s Subject, tool string) PolicyOutcome {
	return ix.EvaluateCall(s, tool, nil)
}

// EvaluateCall applies every rule that matches tool, is about s and
// whose condition holds for f. The strongest effect wins (deny over ask
// over allow; of equals the earliest rule); with no such rule the answer
// is deny, so a tool nobody allowed is never used.
func (ix *PolicyIndex) EvaluateCall(s Subject, tool string, f *CallFacts) PolicyOutcome {
	var buf [8]*indexedRule
	return decide(ix.matching(s, tool, anyRule, buf[:0]), f, nil)
}

// Explain is EvaluateCall with what each matching rule said.
func (ix *PolicyIndex) Explain(s Subject, tool string, f *CallFacts) (PolicyOutcome, []RuleStep) {
	steps := []RuleStep{}
	out := decide(ix.matching(s, tool, anyRule, nil), f, &steps)
	return out, steps
}

// denyingNotByRole returns the deny decision (or condition error) of the
// rules about s's subject or projects (not its roles) matching tool.
func (ix *PolicyIndex) denyingNotByRole(s Subject, tool string, f *CallFacts) (PolicyOutcome, bool) {
	var buf [8]*indexedRule
	c := ix.matching(Subject{Subject: s.Subject, Projects: s.Projects}, tool, func(r PolicyRule) bool { return r.Effect == EffectDeny }, buf[:0])
	out := decide(c, f, nil)
	return out, out.Rule != ""
}
