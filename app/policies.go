package app

import (
	"context"

	"github.com/agentauth/agentauth/domain"
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
	if err := s.store.CreatePolicy(ctx, r); err != nil {
		return domain.PolicyRule{}, err
	}
	return r, nil
}

// List returns every rule, oldest first.
func (s *Policies) List(ctx context.Context) ([]domain.PolicyRule, error) {
	return s.store.ListPolicies(ctx)
}

// Delete removes a rule.
func (s *Policies) Delete(ctx context.Context, id string) error {
	return s.store.DeletePolicy(ctx, id)
}
