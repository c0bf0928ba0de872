package app

import (
	"context"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/policycel"
	"github.com/agentauth/agentauth/ports"
)

// Policies writes and reads the tool rules (ADMIN writes, AUDITOR reads).
type Policies struct {
	store ports.PolicyStore
	clock ports.Clock
}

// NewPolicies wires the use case.
func NewPolicies(store ports.PolicyStore, clock ports.Clock) *Policies {
	return &Policies{store: store, clock: clock}
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
