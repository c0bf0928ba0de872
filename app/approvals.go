package app

import (
	"context"
	"errors"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// maxPendingSessions bounds the sessions Pending looks into: the newest
// the caller sees, as one page of the console's.
const maxPendingSessions = 50

// Pending lists the calls waiting for approval in the newest sessions p
// sees (its own, for a LEAD its projects', for an ADMIN every session),
// newest first, with what an approver is shown.
func (s *ToolCalls) Pending(ctx context.Context, p domain.Principal) ([]domain.Approval, error) {
	sessions, err := s.sessions.List(ctx, p, PageRequest{Limit: maxPendingSessions})
	if err != nil {
		return nil, err
	}
	var out []domain.Approval
	for _, sess := range sessions.Items {
		if sess.State != domain.SessionActive {
			continue
		}
		calls, err := s.store.ListToolCalls(ctx, ports.ToolCallFilter{Session: sess.ID, Status: domain.CallPending, Page: ports.Page{Limit: maxPendingSessions}})
		if err != nil {
			return nil, err
		}
		for _, c := range calls {
			a, err := s.approval(ctx, sess, c)
			if err != nil {
				return nil, err
			}
			out = append(out, a)
		}
	}
	return out, nil
}

// approval completes a pending call of sess with its chain, its tool and
// the names of the agents and people it names.
func (s *ToolCalls) approval(ctx context.Context, sess domain.Session, c domain.ToolCall) (domain.Approval, error) {
	a := domain.Approval{Call: c, Session: sess}
	var loop *domain.TokenRefusal
	switch links, err := agentLinks(ctx, s.agents, sess.ID, c.Agent); {
	case err == nil:
		a.Chain, a.ChainNames = make([]string, len(links)), make([]string, len(links))
		for i, ag := range links {
			a.Chain[i], a.ChainNames[i] = ag.ID, ag.Name
		}
	case !errors.Is(err, domain.ErrNotFound) && !errors.Is(err, domain.ErrNotVisible) && !errors.As(err, &loop):
		return a, err
	}
	names, err := s.owners.PersonNames(ctx, sess.Owner, c.RequestedBy, c.ResolvedBy)
	if err != nil {
		return a, err
	}
	a.Names = names
	switch t, err := s.catalog.GetTool(ctx, c.Tool); {
	case err == nil:
		a.Tool = &t
	case !errors.Is(err, domain.ErrNotFound):
		return a, err
	}
	return a, nil
}
