package domain

// PolicyIndex is the policy rules compiled for decisions: grouped by whom
// they are about (a role, a project, a subject), then by tool pattern, exact
// names in a map and wildcard patterns in a prefix tree keyed by the
// characters before their first '*'. A decision touches only the rules of
// the caller's roles, projects and subject whose pattern can match the tool,
// so its cost does not grow with the rules about others or other tools.
// An index is immutable once built; a nil index holds no rules.
type PolicyIndex struct {
	scopes map[scopeKey]*toolIndex
	rules  int
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
}

type toolIndex struct {
	exact map[string][]indexedRule
	wild  prefixNode
}

// prefixNode holds the wildcard rules whose literal prefix is the path from
// the root to the node.
type prefixNode struct {
	rules []indexedRule
	next  map[byte]*prefixNode
}

// NewPolicyIndex compiles rules (in the order a decision would read them).
// Rules with an unknown scope are about nobody, and rules with an unknown
// effect say nothing: both are left out.
func NewPolicyIndex(rules []PolicyRule) *PolicyIndex {
	ix := &PolicyIndex{scopes: make(map[scopeKey]*toolIndex), rules: len(rules)}
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
			t = &toolIndex{exact: make(map[string][]indexedRule)}
			ix.scopes[k] = t
		}
		t.add(indexedRule{pos: i, rule: r, pattern: asciiLower(r.Tool)})
	}
	return ix
}

func (t *toolIndex) add(r indexedRule) {
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

// best is the strongest match seen so far.
type best struct {
	found bool
	rule  indexedRule
}

func (b *best) offer(r indexedRule) {
	if !b.found || r.rule.Effect.rank() > b.rule.rule.Effect.rank() ||
		r.rule.Effect.rank() == b.rule.rule.Effect.rank() && r.pos < b.rule.pos {
		b.found, b.rule = true, r
	}
}

// scan offers every rule of t whose pattern matches name (canonical form)
// and that keep accepts.
func (t *toolIndex) scan(name string, keep func(PolicyRule) bool, b *best) {
	for _, r := range t.exact[name] {
		if keep(r.rule) {
			b.offer(r)
		}
	}
	n := &t.wild
	for i := 0; ; i++ {
		for _, r := range n.rules {
			if keep(r.rule) && MatchTool(r.pattern, name) {
				b.offer(r)
			}
		}
		if i == len(name) || n.next == nil {
			return
		}
		if n = n.next[name[i]]; n == nil {
			return
		}
	}
}

// strongest is the strongest rule about s matching tool that keep accepts.
func (ix *PolicyIndex) strongest(s Subject, tool string, keep func(PolicyRule) bool) best {
	var b best
	if ix == nil || len(ix.scopes) == 0 {
		return b
	}
	name := asciiLower(tool)
	visit := func(k scopeKey) {
		if t := ix.scopes[k]; t != nil {
			t.scan(name, keep, &b)
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
	return b
}

func anyRule(PolicyRule) bool { return true }

// Evaluate applies every rule that matches tool and is about s. The
// strongest effect wins (deny over ask over allow; of equals the earliest
// rule); with no matching rule the answer is deny, so a tool nobody allowed
// is never used.
func (ix *PolicyIndex) Evaluate(s Subject, tool string) PolicyOutcome {
	b := ix.strongest(s, tool, anyRule)
	if !b.found {
		return PolicyOutcome{Effect: EffectDeny}
	}
	return PolicyOutcome{Effect: b.rule.rule.Effect, Rule: b.rule.rule.ID}
}

// denyingNotByRole returns the earliest deny rule matching tool among the
// rules about s's subject or projects (not its roles).
func (ix *PolicyIndex) denyingNotByRole(s Subject, tool string) (PolicyRule, bool) {
	b := ix.strongest(Subject{Subject: s.Subject, Projects: s.Projects}, tool, func(r PolicyRule) bool { return r.Effect == EffectDeny })
	return b.rule.rule, b.found
}
