package app

import (
	"context"

	"github.com/agentauth/agentauth/domain"
)

// DecideWithToken decides and stores one tool call asked for with an agent
// token (see domain.Authorizer.DecideAgentCall: its owner's roles now within the token): only for the token's session and
// agent; agent "" is the token's. The session and agent are those
// AgentTokens.Authenticate read for this request.
func (s *ToolCalls) DecideWithToken(ctx context.Context, caller VerifiedAgent, session string, req CallRequest) (domain.ToolCall, error) {
	g := caller.Grant
	if req.Agent == "" {
		req.Agent = g.Agent()
	}
	if session != g.Session || req.Agent != g.Agent() {
		return domain.ToolCall{}, domain.RefuseToken(domain.ReasonTokenOtherSession, domain.ErrForbidden,
			"the agent token is for agent %s of session %s", g.Agent(), g.Session)
	}
	in, err := s.input(ctx, req)
	if err != nil {
		return domain.ToolCall{}, err
	}
	in.Principal, in.Session, in.Agent, in.Chain = caller.Owner, caller.Session, caller.Agent, g.Chain
	return s.keep(ctx, in, s.authz.DecideAgentCall(in, g), "agent:"+req.Agent)
}
