package app

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/policycel"
	"github.com/agentauth/agentauth/ports"
)

// PolicyRules serves the policy rules compiled into a domain.PolicyIndex
// (their conditions with cel-go), so a decision costs the same with 10
// rules or 10,000. Each use reads the
// store's policy version (one indexed row; the store moves it in the same
// transaction as any change to the rules; from memory when the Registry
// keeps it) and recompiles only when it moved: a change made on any instance sharing the store is in force on
// every instance for every decision that starts after the change was
// committed, that is before the writing request is answered.
type PolicyRules struct {
	store ports.PolicyStore
	// rebuild lets one caller at a time read and compile the rules.
	rebuild sync.Mutex
	current atomic.Pointer[compiledRules]
	// conditions are the compiled conditions by text, kept across
	// rebuilds (under rebuild): a change of one rule compiles one.
	conditions map[string]compiledCondition
}

type compiledCondition struct {
	cond domain.Condition
	err  error
}

type compiledRules struct {
	// version was read before the rules, so the rules are at least as new.
	version int64
	index   *domain.PolicyIndex
	// rules are the rules compiled, oldest first.
	rules []domain.PolicyRule
}

// NewPolicyRules wires the compiled rules over store.
func NewPolicyRules(store ports.PolicyStore) *PolicyRules {
	return &PolicyRules{store: store}
}

// Index returns the rules as they stand now.
func (r *PolicyRules) Index(ctx context.Context) (*domain.PolicyIndex, error) {
	c, err := r.compiled(ctx)
	if err != nil {
		return nil, err
	}
	return c.index, nil
}

// Naming returns the rules as they stand now whose tool pattern matches
// one of tools, newest first.
func (r *PolicyRules) Naming(ctx context.Context, tools []string) ([]domain.PolicyRule, error) {
	c, err := r.compiled(ctx)
	if err != nil {
		return nil, err
	}
	var out []domain.PolicyRule
	for i := len(c.rules) - 1; i >= 0; i-- {
		if slices.ContainsFunc(tools, func(t string) bool { return domain.MatchTool(c.rules[i].Tool, t) }) {
			out = append(out, c.rules[i])
		}
	}
	return out, nil
}

// compiled returns the rules compiled as they stand now, compiling them
// when the store's version moved.
func (r *PolicyRules) compiled(ctx context.Context) (*compiledRules, error) {
	v, err := r.store.PolicyVersion(ctx)
	if err != nil {
		return nil, err
	}
	if c := r.current.Load(); c != nil && c.version >= v {
		return c, nil
	}
	r.rebuild.Lock()
	defer r.rebuild.Unlock()
	if c := r.current.Load(); c != nil && c.version >= v {
		return c, nil // compiled by the caller before us
	}
	rules, err := r.store.ListPolicies(ctx, ports.Page{})
	if err != nil {
		return nil, err
	}
	slices.Reverse(rules) // a decision reads them oldest first
	kept := make(map[string]compiledCondition, len(r.conditions))
	compile := func(text string) (domain.Condition, error) {
		c, ok := r.conditions[text]
		if !ok {
			c.cond, c.err = policycel.Compile(text)
		}
		kept[text] = c
		return c.cond, c.err
	}
	c := &compiledRules{version: v, index: domain.NewPolicyIndexWith(rules, compile), rules: rules}
	r.conditions = kept
	r.current.Store(c)
	return c, nil
}
