package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// ToolCalls decides tool calls (role → policy → session mode → agent
// limits), stores every decision, and lets the session's owner, its LEAD or
// an ADMIN approve or reject the calls that need approval.
type ToolCalls struct {
	store    ports.ToolCallStore
	agents   ports.AgentStore
	catalog  ports.CatalogStore
	policies *PolicyRules
	settings ports.SettingsStore
	sessions *Sessions
	authz    *domain.Authorizer
	clock    ports.Clock
	// notify tells approvers outside agentauth of calls that wait and of
	// their outcomes; nil: nobody is told.
	notify ports.ApprovalNotifier
	// owners knows people's roles now (approvals are rechecked with
	// them); nil in hybrid mode.
	owners *APIKeys
	// quotas counts the calls limits admit.
	quotas *Quotas
}

// WithQuotas counts the calls that limits admit with q.
func (s *ToolCalls) WithQuotas(q *Quotas) *ToolCalls {
	s.quotas = q
	return s
}

// NewToolCalls wires the use case.
func NewToolCalls(store ports.ToolCallStore, agents ports.AgentStore, catalog ports.CatalogStore, policies *PolicyRules,
	settings ports.SettingsStore, sessions *Sessions, authz *domain.Authorizer, clock ports.Clock) *ToolCalls {
	return &ToolCalls{store: store, agents: agents, catalog: catalog, policies: policies, settings: settings, sessions: sessions, authz: authz, clock: clock}
}

// CallRequest is one tool call asked for.
type CallRequest struct {
	// Agent is the agent of the session that calls ("" with an agent
	// token: the token's).
	Agent string
	Tool  string
	// Arguments are the RFC 8785 canonical JSON of an object (the edge
	// makes it canonical); nil is {}. What is stored, shown to approvers
	// and hashed (domain.ArgumentsHash) is exactly these bytes.
	Arguments []byte
}

// arguments checks a request's canonical arguments for storing: nil is
// {}, more than domain.MaxArgumentsBytes is refused.
func (r CallRequest) arguments() ([]byte, error) {
	if r.Arguments == nil {
		return []byte("{}"), nil
	}
	if len(r.Arguments) > domain.MaxArgumentsBytes || r.Arguments[0] != '{' {
		return nil, fmt.Errorf("arguments: a JSON object of at most %d bytes (as RFC 8785 canonical JSON): %w", domain.MaxArgumentsBytes, domain.ErrInvalidInput)
	}
	return r.Arguments, nil
}

// Decide decides and stores one tool call of an agent of the session.
func (s *ToolCalls) Decide(ctx context.Context, p domain.Principal, session string, req CallRequest) (domain.ToolCall, error) {
	sess, err := s.sessions.Manageable(ctx, p, session)
	if err != nil {
		return domain.ToolCall{}, err
	}
	ag, err := s.agents.GetAgent(ctx, req.Agent)
	if err == nil && ag.Session != session {
		err = fmt.Errorf("agent %s: %w", req.Agent, domain.ErrNotVisible)
	}
	if err != nil {
		return domain.ToolCall{}, fmt.Errorf("agent of this session: %w", err)
	}
	in, err := s.input(ctx, req)
	if err != nil {
		return domain.ToolCall{}, err
	}
	in.Principal, in.Session, in.Agent = p, sess, ag
	if in.Chain, err = s.chainFor(ctx, in); err != nil {
		return domain.ToolCall{}, err
	}
	return s.keep(ctx, in, s.authz.DecideToolCall(in), p.Subject)
}

// chainFor is the agents from the session's root to in.Agent, read only
// when a rule's condition may look at them (agent.chain).
func (s *ToolCalls) chainFor(ctx context.Context, in domain.ToolCallInput) ([]string, error) {
	if in.Policy.Conditions() == 0 || in.Agent.Parent == "" {
		return nil, nil
	}
	_, chain, err := agentChain(ctx, s.agents, in.Session.ID, in.Agent.ID)
	return chain, err
}

// input is a decision's input for req, without who asks: the canonical
// tool and arguments, whether a server registered the tool, the security
// gateway and the compiled policy.
func (s *ToolCalls) input(ctx context.Context, req CallRequest) (domain.ToolCallInput, error) {
	tool, err := domain.CanonicalToolName(req.Tool)
	if err != nil {
		return domain.ToolCallInput{}, err
	}
	args, err := req.arguments()
	if err != nil {
		return domain.ToolCallInput{}, err
	}
	in := domain.ToolCallInput{Tool: tool, Arguments: args, Now: s.clock.Now().UTC()}
	return in, s.withCatalogAndPolicy(ctx, &in)
}

// keep stores the decision d of in, asked for by by.
func (s *ToolCalls) keep(ctx context.Context, in domain.ToolCallInput, d domain.ToolDecision, by string) (domain.ToolCall, error) {
	d, err := s.quotas.Charge(ctx, in, d)
	if err != nil {
		return domain.ToolCall{}, err
	}
	call := domain.ToolCall{ID: newID("call_"), Session: in.Session.ID, Agent: in.Agent.ID, Tool: in.Tool, Decision: d,
		Status: domain.StatusOf(d.Effect), RequestedBy: by, CreatedAt: s.clock.Now().UTC(),
		Arguments: in.Arguments, ArgsHash: domain.ArgumentsHash(in.Arguments)}
	if in.Registered != nil {
		call.ToolDigest = in.Registered.Pin.Digest
	}
	if err := s.store.CreateToolCall(ctx, call); err != nil {
		return domain.ToolCall{}, err
	}
	if call.Status == domain.CallPending {
		s.announce(ctx, in.Session, call)
	}
	return call, nil
}

// WithNotifier tells n of the calls that start to wait and of their
// outcomes (NewApplication gives it Dependencies.Approvals).
func (s *ToolCalls) WithNotifier(n ports.ApprovalNotifier) *ToolCalls {
	s.notify = n
	return s
}

// announce tells the approvals notifier of call of sess: one that starts
// to wait, or its outcome. It queues; the decision never waits for it.
func (s *ToolCalls) announce(ctx context.Context, sess domain.Session, call domain.ToolCall) {
	if s.notify == nil {
		return
	}
	a, err := s.approval(ctx, sess, call)
	if err != nil { // told without its chain and tool rather than not at all
		a = domain.Approval{Call: call, Session: sess}
	}
	s.notify.Notify(ctx, a)
}

// List returns a page of the tool calls of a session the caller may see,
// newest first.
func (s *ToolCalls) List(ctx context.Context, p domain.Principal, session string, req PageRequest) (Page[domain.ToolCall], error) {
	page, err := req.store()
	if err != nil {
		return Page[domain.ToolCall]{}, err
	}
	if _, err := s.sessions.Get(ctx, p, session); err != nil {
		return Page[domain.ToolCall]{}, err
	}
	list, err := s.store.ListToolCalls(ctx, ports.ToolCallFilter{Session: session, Page: page})
	if err != nil {
		return Page[domain.ToolCall]{}, err
	}
	now := s.clock.Now()
	for i := range list {
		if list[i].Abandoned(now) {
			// Its wait ended: it can only be withdrawn, and reads so (it is
			// stored so when next resolved).
			list[i].Status = domain.CallWithdrawn
		}
	}
	return pageOf(list, page, func(c domain.ToolCall) ports.Cursor { return ports.CursorOf(c.CreatedAt, c.ID) }, nil), nil
}

// WithdrawnNobodyWaits is who withdrew a call whose wait ended (its
// ResolvedBy).
const WithdrawnNobodyWaits = "agentauth: nobody waits for it any more"

// Resolve approves or rejects a pending call of a session the caller
// manages. A call that is no longer pending is a conflict, and so is the
// approval of a call that the session's current state, the gateway or the
// agent's limits would now deny (a session made readonly meanwhile), and
// any resolution of a call the gateway held whose wait ended: it is
// withdrawn instead.
func (s *ToolCalls) Resolve(ctx context.Context, p domain.Principal, session, id string, approve bool) (domain.ToolCall, error) {
	sess, err := s.sessions.Manageable(ctx, p, session)
	if err != nil {
		return domain.ToolCall{}, err
	}
	call, err := s.store.GetToolCall(ctx, id)
	if err == nil && call.Session != session {
		err = fmt.Errorf("tool call %s: %w", id, domain.ErrNotVisible)
	}
	if err != nil {
		return domain.ToolCall{}, err
	}
	if at := s.clock.Now().UTC(); call.Abandoned(at) {
		// Its waiter's wait ended: nothing could receive its result.
		withdrawn, err := s.store.ResolveToolCall(ctx, id, domain.CallWithdrawn, WithdrawnNobodyWaits, at)
		if err != nil {
			return domain.ToolCall{}, err
		}
		s.announce(ctx, sess, withdrawn)
		return domain.ToolCall{}, fmt.Errorf("tool call %s is withdrawn: nobody waits for it any more (its wait ended %s): %w",
			id, call.WaitUntil.Format(time.RFC3339), domain.ErrConflict)
	}
	status := domain.CallRejected
	if approve {
		status = domain.CallApproved
		if err := s.recheck(ctx, p, sess, call); err != nil {
			return domain.ToolCall{}, err
		}
	}
	if err := s.owners.Remember(ctx, p); err != nil { // its name, beside its subject
		return domain.ToolCall{}, err
	}
	resolved, err := s.store.ResolveToolCall(ctx, id, status, p.Subject, s.clock.Now().UTC())
	if err == nil {
		s.announce(ctx, sess, resolved)
	}
	return resolved, err
}

// recheck refuses the approval of call by approver when a step that does
// not depend on the requester's roles (session state, gateway, deny rules
// for the requester or the project, session mode, agent limits) would now
// deny it, or when the tool needs a second person and approver owns the
// session.
func (s *ToolCalls) recheck(ctx context.Context, approver domain.Principal, sess domain.Session, call domain.ToolCall) error {
	if call.Status != domain.CallPending {
		return nil // the store answers the conflict
	}
	ag, err := s.agents.GetAgent(ctx, call.Agent)
	if err != nil {
		return fmt.Errorf("agent of tool call %s: %w", call.ID, err)
	}
	policy, err := s.policies.Index(ctx)
	if err != nil {
		return err
	}
	who, err := s.requesterNow(ctx, sess, call)
	if err != nil {
		return err
	}
	in := domain.ToolCallInput{Principal: who, Session: sess, Agent: ag, Tool: call.Tool, Policy: policy, Arguments: call.Arguments, Now: s.clock.Now().UTC()}
	if in.Chain, err = s.chainFor(ctx, in); err != nil {
		return err
	}
	switch t, err := s.catalog.GetTool(ctx, call.Tool); {
	case err == nil && t.SecondApprover && approver.Subject == sess.Owner:
		return &domain.Refusal{Code: domain.ReasonSecondApprover, Missing: domain.PermToolCallsApprove,
			Message: "tool " + t.Name + " needs its calls approved by someone other than the session's owner"}
	case err == nil && call.ToolDigest != "" && t.Pin.Digest != call.ToolDigest:
		return fmt.Errorf("tool call %s can no longer be approved: tool %s's definition changed since it was asked for (%s): %w",
			call.ID, t.Name, domain.ReasonToolDefinitionChanged, domain.ErrConflict)
	case err == nil:
		in.Registered = &t
	case !errors.Is(err, domain.ErrNotFound):
		return err
	}
	st, err := s.settings.GetSettings(ctx)
	if err != nil {
		return err
	}
	in.Gateway = st.SecurityGateway
	d := domain.RecheckApproval(in)
	if len(who.Roles) > 0 {
		// Its roles now are known: the whole decision, role rules too.
		if now := s.authz.DecideToolCall(in); now.Effect == domain.EffectDeny {
			d = &now
		}
	}
	if d != nil {
		return fmt.Errorf("tool call %s can no longer be approved: %s (%s): %w", call.ID, d.Message, d.Reason, domain.ErrConflict)
	}
	return nil
}

// requesterNow is who asked call, as its approval is decided: an agent's
// call (requested by agent:<id>) its session's owner, a person's call that
// person; with the roles it holds now where agentauth knows them (see
// ownerNow; none: a person it keeps no record of, whose call is rechecked
// without role rules).
func (s *ToolCalls) requesterNow(ctx context.Context, sess domain.Session, call domain.ToolCall) (domain.Principal, error) {
	if strings.HasPrefix(call.RequestedBy, "agent:") {
		return ownerNow(ctx, s.owners, sess)
	}
	roles, _, err := s.owners.OwnerNow(ctx, call.RequestedBy)
	return domain.Principal{Subject: call.RequestedBy, Roles: roles}, err
}

// withCatalogAndPolicy completes a decision's input with what the service
// knows about the tool: whether a server registered it, the security
// gateway, and the compiled policy.
func (s *ToolCalls) withCatalogAndPolicy(ctx context.Context, in *domain.ToolCallInput) error {
	switch t, err := s.catalog.GetTool(ctx, in.Tool); {
	case err == nil:
		in.Registered = &t
	case !errors.Is(err, domain.ErrNotFound):
		return err
	}
	st, err := s.settings.GetSettings(ctx)
	if err != nil {
		return err
	}
	in.Gateway = st.SecurityGateway
	in.Policy, err = s.policies.Index(ctx)
	return err
}
