package app

import (
	"context"
	"fmt"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Agents creates the agents of a session and their sub-agents; a
// sub-agent gets the intersection of what it asks for and what its parent
// has, never more.
type Agents struct {
	store    ports.AgentStore
	sessions *Sessions
	clock    ports.Clock
}

// NewAgents wires the use case.
func NewAgents(store ports.AgentStore, sessions *Sessions, clock ports.Clock) *Agents {
	return &Agents{store: store, sessions: sessions, clock: clock}
}

// NewAgent is what a caller asks for: a parent (empty for a root agent), a
// tool list (nil: everything the parent has), a mode ("": the parent's)
// and a name (optional, domain.ValidateAgentName: a label).
type NewAgent struct {
	Parent string
	Tools  []string
	Mode   string
	Name   string
}

// Create adds an agent to a session the caller manages.
func (s *Agents) Create(ctx context.Context, p domain.Principal, session string, in NewAgent) (domain.Agent, error) {
	if _, err := s.sessions.Manageable(ctx, p, session); err != nil {
		return domain.Agent{}, err
	}
	return s.CreateDelegated(ctx, session, in, p.Subject)
}

// CreateDelegated adds a sub-agent on the authority of its parent's
// credential (an agent-token exchange; by names who asked), with the same
// narrowing as Create. The caller has checked that credential.
func (s *Agents) CreateDelegated(ctx context.Context, session string, in NewAgent, by string) (domain.Agent, error) {
	req, err := domain.RequestLimits(in.Tools, in.Mode)
	if err != nil {
		return domain.Agent{}, err
	}
	if err := domain.ValidateAgentName(in.Name); err != nil {
		return domain.Agent{}, err
	}
	var parent *domain.Agent
	if in.Parent != "" {
		pa, err := s.store.GetAgent(ctx, in.Parent)
		if err == nil && pa.Session != session {
			// Another session's agent is not found here, as in tool calls:
			// its existence does not leak.
			err = fmt.Errorf("agent %s: %w", in.Parent, domain.ErrNotVisible)
		}
		if err != nil {
			return domain.Agent{}, fmt.Errorf("parent agent: %w", err)
		}
		parent = &pa
	}
	a, err := domain.ChildAgent(newID("agt_"), session, parent, req, by, s.clock.Now().UTC())
	if err != nil {
		return domain.Agent{}, err
	}
	a.Name = in.Name
	if err := s.store.CreateAgent(ctx, a); err != nil {
		return domain.Agent{}, err
	}
	return a, nil
}

// List returns a page of the agents of a session the caller may see,
// newest first.
func (s *Agents) List(ctx context.Context, p domain.Principal, session string, req PageRequest) (Page[domain.Agent], error) {
	page, err := req.store()
	if err != nil {
		return Page[domain.Agent]{}, err
	}
	if _, err := s.sessions.Get(ctx, p, session); err != nil {
		return Page[domain.Agent]{}, err
	}
	list, err := s.store.ListAgents(ctx, session, page)
	if err != nil {
		return Page[domain.Agent]{}, err
	}
	return pageOf(list, page, func(a domain.Agent) ports.Cursor { return ports.CursorOf(a.CreatedAt, a.ID) }, nil), nil
}
