package app

import (
	"context"
	"fmt"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/policycel"
	"github.com/agentauth/agentauth/ports"
)

// Policies writes and reads the tool rules (ADMIN writes, AUDITOR reads).
type Policies struct {
	store ports.PolicyStore
	clock ports.Clock
	// rules are the compiled rules Simulate decides with.
	rules *PolicyRules
}

// NewPolicies wires the use case.
func NewPolicies(store ports.PolicyStore, clock ports.Clock) *Policies {
	return &Policies{store: store, clock: clock}
}

// withRules decides simulations with rules.
func (s *Policies) withRules(rules *PolicyRules) *Policies {
	s.rules = rules
	return s
}

// Create validates and stores a rule.
func (s *Policies) Create(ctx context.Context, p domain.Principal, r domain.PolicyRule) (domain.PolicyRule, error) {
	r.ID, r.CreatedBy, r.CreatedAt = newID("pol_"), p.Subject, s.clock.Now().UTC()
	if err := domain.ValidateRule(r); err != nil {
		return domain.PolicyRule{}, err
	}
	r.Tool, _ = domain.CanonicalToolPattern(r.Tool) // valid: ValidateRule checked it
	if r.When != "" {
		if _, err := policycel.Compile(r.When); err != nil {
			return domain.PolicyRule{}, err // a *domain.ConditionError: 400 with its position
		}
	}
	if err := s.store.CreatePolicy(ctx, r); err != nil {
		return domain.PolicyRule{}, err
	}
	return r, nil
}

// List returns a page of the rules, newest first.
func (s *Policies) List(ctx context.Context, req PageRequest) (Page[domain.PolicyRule], error) {
	page, err := req.store()
	if err != nil {
		return Page[domain.PolicyRule]{}, err
	}
	list, err := s.store.ListPolicies(ctx, page)
	if err != nil {
		return Page[domain.PolicyRule]{}, err
	}
	return pageOf(list, page, func(r domain.PolicyRule) ports.Cursor { return ports.CursorOf(r.CreatedAt, r.ID) }, nil), nil
}

// Delete removes a rule.
func (s *Policies) Delete(ctx context.Context, id string) error {
	return s.store.DeletePolicy(ctx, id)
}

// Simulation is a call to decide with the rules in force, as if it were
// made: who (subject, roles, the session's project and mode, the agent's
// depth and chain), the tool and server, and the arguments (canonical
// JSON of an object; nil: {}).
type Simulation struct {
	Subject   string
	Roles     []domain.Role
	Project   string
	Mode      domain.SessionMode
	Depth     int
	Chain     []string
	Tool      string
	Server    string
	Arguments []byte
}

// Simulate answers which policy rule decides the call and why, and what
// every rule matching it said (its condition held, did not, failed, or it
// was not reached), deciding nothing and storing nothing.
func (s *Policies) Simulate(ctx context.Context, authz *domain.Authorizer, q Simulation) (domain.ToolDecision, []domain.RuleStep, error) {
	tool, err := domain.CanonicalToolName(q.Tool)
	if err != nil {
		return domain.ToolDecision{}, nil, err
	}
	if q.Arguments == nil {
		q.Arguments = []byte("{}")
	}
	for _, r := range q.Roles {
		if !authz.Knows(r) {
			return domain.ToolDecision{}, nil, fmt.Errorf("unknown role %q: %w", r, domain.ErrInvalidInput)
		}
	}
	if s.rules == nil {
		s.rules = NewPolicyRules(s.store)
	}
	ix, err := s.rules.Index(ctx)
	if err != nil {
		return domain.ToolDecision{}, nil, err
	}
	who := domain.Subject{Subject: q.Subject, Roles: authz.PolicyRoles(q.Roles)}
	if q.Project != "" {
		who.Projects = []string{q.Project}
	}
	chain := q.Chain
	if chain == nil {
		chain = []string{q.Subject}
	}
	f := &domain.CallFacts{Tool: tool, Server: q.Server, Arguments: q.Arguments, SessionMode: q.Mode, Project: q.Project,
		Depth: q.Depth, Chain: chain, Subject: q.Subject, Roles: who.Roles, Now: s.clock.Now().UTC()}
	d, steps := domain.ExplainPolicy(ix, who, f)
	return d, steps, nil
}
