package app

import (
	"context"

	"github.com/agentauth/agentauth/domain"
)

// DecideWithToken decides and stores one tool call asked for with an agent
// token (see domain.Authorizer.DecideAgentCall: its owner's roles now within the token): only for the token's session and
// agent; agent "" is the token's. The session and agent are those
// AgentTokens.Authenticate read for this request.
func (s *ToolCalls) DecideWithToken(ctx context.Context, caller VerifiedAgent, session, agent, tool string) (domain.ToolCall, error) {
	g := caller.Grant
	if agent == "" {
		agent = g.Agent()
	}
	if session != g.Session || agent != g.Agent() {
		return domain.ToolCall{}, domain.RefuseToken(domain.ReasonTokenOtherSession, domain.ErrForbidden,
			"the agent token is for agent %s of session %s", g.Agent(), g.Session)
	}
	tool, err := domain.CanonicalToolName(tool)
	if err != nil {
		return domain.ToolCall{}, err
	}
	in := domain.ToolCallInput{Principal: caller.Owner, Session: caller.Session, Agent: caller.Agent, Tool: tool}
	if err := s.withCatalogAndPolicy(ctx, &in); err != nil {
		return domain.ToolCall{}, err
	}
	d := s.authz.DecideAgentCall(in, g)
	call := domain.ToolCall{ID: newID("call_"), Session: session, Agent: agent, Tool: tool, Decision: d,
		Status: domain.StatusOf(d.Effect), RequestedBy: "agent:" + agent, CreatedAt: s.clock.Now().UTC()}
	if err := s.store.CreateToolCall(ctx, call); err != nil {
		return domain.ToolCall{}, err
	}
	return call, nil
}
