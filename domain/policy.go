package domain

import (
	"fmt"
	"time"
)

// Effect is what a policy rule says about a tool.
type Effect string

// Effects, from weakest to strongest: when several rules match, the
// strongest wins, so deny wins over ask and ask over allow.
const (
	EffectAllow Effect = "allow"
	EffectAsk   Effect = "ask"
	EffectDeny  Effect = "deny"
)

func (e Effect) rank() int {
	switch e {
	case EffectAllow:
		return 1
	case EffectAsk:
		return 2
	case EffectDeny:
		return 3
	}
	return 0
}

// ScopeKind says whom a rule applies to.
type ScopeKind string

// Rule scopes.
const (
	ScopeRole    ScopeKind = "role"
	ScopeProject ScopeKind = "project"
	ScopeSubject ScopeKind = "subject"
)

// PolicyRule allows, asks for or denies tools whose name matches Tool (a
// pattern where * matches any run of characters) for a role, a project or
// a subject.
type PolicyRule struct {
	ID     string
	Effect Effect
	Tool   string
	Scope  ScopeKind
	Value  string // the role, project ID or subject
	// When is the rule's condition (CEL, see CallFacts); "" holds always.
	When string
	// Limit bounds the calls the rule allows or asks for (zero: none).
	Limit     Limit
	CreatedBy string
	CreatedAt time.Time
}

// ValidateRule checks every field of a rule.
func ValidateRule(r PolicyRule) error {
	if r.Effect.rank() == 0 {
		return fmt.Errorf("policy effect %q: want allow, ask or deny: %w", r.Effect, ErrInvalidInput)
	}
	if _, err := CanonicalToolPattern(r.Tool); err != nil {
		return err
	}
	if len(r.When) > MaxConditionBytes {
		return fmt.Errorf("policy when: at most %d bytes: %w", MaxConditionBytes, ErrInvalidInput)
	}
	if err := r.Limit.Validate(); err != nil {
		return err
	}
	if !r.Limit.IsZero() && r.Effect == EffectDeny {
		return fmt.Errorf("policy limit: a deny rule admits no calls to count: %w", ErrInvalidInput)
	}

	switch r.Scope {
	case ScopeRole:
		return validateRoleName(r.Value)
	case ScopeProject, ScopeSubject:
		if r.Value == "" || len(r.Value) > 256 {
			return fmt.Errorf("policy %s must have 1 to 256 characters: %w", r.Scope, ErrInvalidInput)
		}
		return nil
	}
	return fmt.Errorf("policy scope %q: want role, project or subject: %w", r.Scope, ErrInvalidInput)
}

// stripStars removes the wildcards before the name check; a pattern that is
// only stars becomes "x" so that "*" is accepted.
func stripStars(p string, nonEmpty bool) string {
	out := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		if p[i] != '*' {
			out = append(out, p[i])
		}
	}
	if len(out) == 0 && nonEmpty {
		return "x"
	}
	return string(out)
}

// MatchTool reports whether name matches pattern, where * matches any run of
// characters (also none) and every other character matches itself but for
// ASCII case (see CanonicalToolName: a rule stored before names were
// canonical still matches every spelling).
func MatchTool(pattern, name string) bool {
	// Iterative glob with one backtrack point: linear in practice, no
	// recursion a hostile pattern could blow up.
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case p < len(pattern) && lowerASCII(pattern[p]) == lowerASCII(name[n]):
			p++
			n++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// Subject is whom a policy is evaluated for.
type Subject struct {
	Subject  string
	Roles    []Role
	Projects []string // the project of the session, or the caller's projects when listing tools
}

// PolicyOutcome is the verdict of the rules on one tool.
type PolicyOutcome struct {
	Effect Effect
	// Rule is the ID of the deciding rule; empty when no rule matched.
	Rule string
	// When is the deciding rule's condition ("": none). Error says why it
	// could not be evaluated (the outcome is then deny). Maybe: it depends
	// on what was not known (the arguments, when listing tools).
	When  string
	Error string
	Maybe bool
}
