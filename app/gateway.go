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

// Gateway decides what an agent asks of a registered server through the
// MCP gateway, with the decision of POST …/tool-calls: which of the
// server's tools the agent may call now, each tools/call (stored like any
// tool call, with its arguments' hash), and the wait for an approval.
type Gateway struct {
	calls   *ToolCalls
	catalog ports.CatalogStore
	clock   ports.Clock
	// defs are the definitions of the tools servers listed lately.
	defs *definitionCache
}

// NewGateway wires the use case.
func NewGateway(calls *ToolCalls, catalog ports.CatalogStore, clock ports.Clock) *Gateway {
	return &Gateway{calls: calls, catalog: catalog, clock: clock, defs: newDefinitionCache(definitionCacheEntries, definitionCacheBytes)}
}

// Server returns a registered server that the gateway can forward to:
// one with an MCP endpoint (else domain.ErrNotFound).
func (s *Gateway) Server(ctx context.Context, name string) (domain.Server, error) {
	sv, err := s.catalog.GetServer(ctx, name)
	if err != nil {
		return domain.Server{}, err
	}
	if sv.Endpoint == "" {
		return domain.Server{}, fmt.Errorf("server %s has no MCP endpoint registered: %w", name, domain.ErrNotFound)
	}
	return sv, nil
}

// Caller is who calls through the gateway, and for which agent of which
// session: the grant of an agent token, or a principal (a managed key, an
// API key, a provider token, a login cookie) acting for an agent of a
// session it may manage, whose calls are decided as POST …/tool-calls
// decides that principal's (its roles, its key's scope).
type Caller struct {
	// Grant is the agent token's; nil for a principal.
	Grant *domain.AgentGrant
	// Principal is who the calls are decided for: the principal, or the
	// agent token's session owner with its roles now.
	Principal domain.Principal
	// Subject and Chain are who the audit names: the session's owner
	// (agent token) or the principal, then the agents, root first.
	Subject string
	Chain   []string
	Session string
	// sess and agent are as read when the caller was made (an agent
	// token's authentication, or PrincipalCaller).
	sess  domain.Session
	agent domain.Agent
}

// Agent is the acting agent: the last of the chain.
func (c Caller) Agent() string { return c.Chain[len(c.Chain)-1] }

// AgentCaller is the caller of an agent token, with the session and agent
// its authentication read (AgentTokens.Authenticate), which the decision
// takes instead of reading them again. The caller points into v.
func AgentCaller(v *VerifiedAgent) Caller {
	g := &v.Grant
	return Caller{Grant: g, Principal: v.Owner, Subject: g.Subject, Chain: g.Chain, Session: g.Session,
		sess: v.Session, agent: v.Agent}
}

// PrincipalCaller is p acting for agent of session: p must be allowed to
// manage the session (as for POST …/tool-calls) and agent must be one of
// the session's.
func (s *Gateway) PrincipalCaller(ctx context.Context, p domain.Principal, session, agent string) (Caller, error) {
	sess, err := s.calls.sessions.Manageable(ctx, p, session)
	if err != nil {
		return Caller{}, err
	}
	ag, chain, err := agentChain(ctx, s.calls.agents, session, agent)
	if err != nil {
		return Caller{}, err
	}
	return Caller{Principal: p, Subject: p.Subject, Chain: chain, Session: session, sess: sess, agent: ag}, nil
}

// Callable reports, for each tool name a server listed, whether caller c
// may call it through server now: a decision other than deny, taken as
// Decide would take it, without storing anything. A name outside the
// tool-name charset is never callable.
func (s *Gateway) Callable(ctx context.Context, c Caller, server string, names []string) ([]bool, error) {
	in, err := s.agentInput(ctx, c)
	if err != nil {
		return nil, err
	}
	tools, err := s.catalog.ListTools(ctx, ports.Page{})
	if err != nil {
		return nil, err
	}
	registered := make(map[string]domain.Tool, len(tools))
	for _, t := range tools {
		if t.Server == server {
			registered[t.Name] = t
		}
	}
	in.Server = server
	out := make([]bool, len(names))
	for i, name := range names {
		tool, err := domain.CanonicalToolName(name)
		if err != nil {
			continue
		}
		in.Tool, in.Registered = tool, nil
		if t, ok := registered[tool]; ok {
			in.Registered = &t
		}
		out[i] = s.decide(in, c).Effect != domain.EffectDeny
	}
	return out, nil
}

// Hold is who waits for a gateway call that asks, and until when (see
// domain.ToolCall.Waiter): the pending call is withdrawn once nobody does.
type Hold struct {
	Waiter string
	Until  time.Time
}

// Decide decides one tools/call of caller c to server, with args (the
// RFC 8785 canonical JSON of its arguments, an object), storing nothing:
// allow and deny are recorded by the request's audit record alone, so a
// decided call costs no database write of its own, and a call that asks
// is stored by Hold. A call that would ask with arguments over
// domain.MaxArgumentsBytes is denied: an approver could not be shown them.
// A tool registered on another server counts as unregistered.
func (s *Gateway) Decide(ctx context.Context, c Caller, server, tool string, args []byte) (domain.ToolCall, error) {
	return s.decideCall(ctx, c, server, tool, args, true)
}

// Redecide is Decide for the retry of a call that asked (MCP 2026-07-28
// brings it back with its requestState): decided anew with the rules in
// force, and not counted against limits again (it was when it asked).
func (s *Gateway) Redecide(ctx context.Context, c Caller, server, tool string, args []byte) (domain.ToolCall, error) {
	return s.decideCall(ctx, c, server, tool, args, false)
}

func (s *Gateway) decideCall(ctx context.Context, c Caller, server, tool string, args []byte, charge bool) (domain.ToolCall, error) {
	tool, err := domain.CanonicalToolName(tool)
	if err != nil {
		return domain.ToolCall{}, err
	}
	in, err := s.agentInput(ctx, c)
	if err != nil {
		return domain.ToolCall{}, err
	}
	in.Tool, in.Arguments, in.Server = tool, args, server
	switch t, err := s.catalog.GetTool(ctx, tool); {
	case err == nil && t.Server == server:
		in.Registered = &t
	case err != nil && !errors.Is(err, domain.ErrNotFound):
		return domain.ToolCall{}, err
	}
	d := s.decide(in, c)
	if in.Registered == nil && d.Effect != domain.EffectDeny {
		// A tool a server offers is callable once an ADMIN registered
		// (and so pinned) it.
		d = domain.ToolDecision{Effect: domain.EffectDeny, Reason: domain.ReasonGatewayUnknown,
			Message: "no tool " + tool + " is registered on server " + server + ": a tool a server offers is callable through the gateway once an ADMIN registers it (POST /api/v2/servers/" + server + "/tools/import)"}
	}
	if charge {
		if d, err = s.calls.quotas.Charge(ctx, in, d); err != nil {
			return domain.ToolCall{}, err
		}
	}
	if d.Effect == domain.EffectAsk && len(args) > domain.MaxArgumentsBytes {
		d = domain.ToolDecision{Effect: domain.EffectDeny, Reason: domain.ReasonArgumentsTooLarge, Rule: d.Rule,
			Message: fmt.Sprintf("tool %s needs approval (%s), and its arguments have %d bytes: an approver is shown at most %d", tool, d.Reason, len(args), domain.MaxArgumentsBytes)}
	}
	by := c.Principal.Subject
	if c.Grant != nil {
		by = "agent:" + c.Agent()
	}
	call := domain.ToolCall{Session: c.Session, Agent: c.Agent(), Tool: tool, Decision: d,
		Status: domain.StatusOf(d.Effect), RequestedBy: by, CreatedAt: s.clock.Now().UTC(), Arguments: args, ArgsHash: domain.ArgumentsHash(args)}
	if in.Registered != nil {
		call.ToolDigest = in.Registered.Pin.Digest
	}
	return call, nil
}

// Hold stores call of c, which asks, as the pending approval (with its
// arguments and their hash it binds to), held as hold says, and tells the
// approvals notifier.
func (s *Gateway) Hold(ctx context.Context, c Caller, call domain.ToolCall, hold Hold) (domain.ToolCall, error) {
	call.ID, call.Waiter, call.WaitUntil = newID("call_"), hold.Waiter, hold.Until.UTC()
	if err := s.calls.store.CreateToolCall(ctx, call); err != nil {
		return domain.ToolCall{}, err
	}
	s.calls.announce(ctx, c.sess, call)
	return call, nil
}

// decide is the decision of POST …/tool-calls for the caller: an agent
// token's (its owner's roles now within the token), else the principal's.
func (s *Gateway) decide(in domain.ToolCallInput, c Caller) domain.ToolDecision {
	if c.Grant != nil {
		return s.calls.authz.DecideAgentCall(in, *c.Grant)
	}
	return s.calls.authz.DecideToolCall(in)
}

// agentInput is a decision's input for the caller's agent, without the
// tool: the session and agent as the caller was made with, the gateway
// setting and policy.
func (s *Gateway) agentInput(ctx context.Context, c Caller) (domain.ToolCallInput, error) {
	in := domain.ToolCallInput{Principal: c.Principal, Session: c.sess, Agent: c.agent, Chain: c.Chain, Now: s.clock.Now().UTC()}
	st, err := s.calls.settings.GetSettings(ctx)
	if err != nil {
		return domain.ToolCallInput{}, err
	}
	in.Gateway = st.SecurityGateway
	in.Policy, err = s.calls.policies.Index(ctx)
	return in, err
}

// AwaitResolution polls the pending call id every poll until it is
// approved or rejected (the approver may use another instance), or ctx
// ends; it returns the call as last read.
func (s *Gateway) AwaitResolution(ctx context.Context, id string, poll time.Duration) (domain.ToolCall, error) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		call, err := s.calls.store.GetToolCall(ctx, id)
		if err != nil || call.Status != domain.CallPending {
			return call, err
		}
		select {
		case <-ctx.Done():
			return call, ctx.Err()
		case <-t.C:
		}
	}
}

// Call reads the tool call id.
func (s *Gateway) Call(ctx context.Context, id string) (domain.ToolCall, error) {
	return s.calls.store.GetToolCall(ctx, id)
}

// Withdraw withdraws the pending call id of c, which nobody waits for any
// more (why says so), and tells the approvals notifier; a call no longer
// pending is a conflict.
func (s *Gateway) Withdraw(ctx context.Context, c Caller, id, why string) (domain.ToolCall, error) {
	call, err := s.calls.store.ResolveToolCall(ctx, id, domain.CallWithdrawn, why, s.clock.Now().UTC())
	if err == nil {
		s.calls.announce(ctx, c.sess, call)
	}
	return call, err
}

// WithdrawWaiting withdraws the pending call of c waiter waits for
// (domain.ErrNotFound when there is none), and tells the approvals
// notifier.
func (s *Gateway) WithdrawWaiting(ctx context.Context, c Caller, waiter, why string) (domain.ToolCall, error) {
	call, err := s.calls.store.WithdrawWaiting(ctx, waiter, why, s.clock.Now().UTC())
	if err == nil {
		s.calls.announce(ctx, c.sess, call)
	}
	return call, err
}

// UseApproval spends the approval of call on the arguments whose hash is
// argsHash: other arguments, or a second use, are refused (ErrConflict),
// and so is a call whose tool's definition changed since it was asked for
// (a *domain.Refusal tool_definition_changed).
func (s *Gateway) UseApproval(ctx context.Context, call domain.ToolCall, argsHash string) error {
	if call.ArgsHash != argsHash {
		return fmt.Errorf("tool call %s was approved for other arguments: %w", call.ID, domain.ErrConflict)
	}
	if err := s.definitionHeld(ctx, call); err != nil {
		return err
	}
	return s.calls.store.UseApproval(ctx, call.ID, s.clock.Now().UTC())
}

// ToolsDiff is what importing a server's own tools/list changes in the
// registry.
type ToolsDiff struct {
	// Add are listed and not registered: an import registers them.
	Add []domain.Tool
	// Unchanged are listed and registered on this server.
	Unchanged []string
	// Unlisted are registered on this server and not listed (left as
	// they are: policies may name them).
	Unlisted []string
	// Elsewhere are listed but registered on another server; Invalid are
	// listed names outside the tool-name charset. Neither is imported.
	Elsewhere []string
	Invalid   []string
	// Changed are registered on this server and listed with a definition
	// other than pinned: an import records the drift, and an ADMIN
	// accepts it (or not) tool by tool. Unchanged tools not pinned yet
	// are pinned.
	Changed []string
}

// Note is what the audit record of an import says: the tools it added
// (applied) or would add, and how many it found unchanged and registered
// but not listed.
func (d ToolsDiff) Note(server string, applied bool) string {
	names := make([]string, len(d.Add))
	for i, t := range d.Add {
		names[i] = t.Name
	}
	verb := "diffed"
	if applied {
		verb = "imported"
	}
	return fmt.Sprintf("tools of server %s %s from its tools/list: add [%s], %d unchanged, %d registered but not listed", server, verb,
		strings.Join(names, " "), len(d.Unchanged), len(d.Unlisted))
}

// ImportTools compares the tools server lists with the registry and, with
// apply, registers the new ones.
func (s *Gateway) ImportTools(ctx context.Context, server string, listed []domain.Tool, apply bool) (ToolsDiff, error) {
	if _, err := s.Server(ctx, server); err != nil {
		return ToolsDiff{}, err
	}
	tools, err := s.catalog.ListTools(ctx, ports.Page{})
	if err != nil {
		return ToolsDiff{}, err
	}
	registered := map[string]domain.Tool{}
	for _, t := range tools {
		registered[strings.ToLower(t.Name)] = t
	}
	d := ToolsDiff{Add: []domain.Tool{}, Unchanged: []string{}, Unlisted: []string{}, Elsewhere: []string{}, Invalid: []string{}, Changed: []string{}}
	var pins, drifts []domain.Tool
	seen := map[string]bool{}
	for _, l := range listed {
		name, err := domain.CanonicalToolName(l.Name)
		switch t, ok := registered[name]; {
		case err != nil:
			d.Invalid = append(d.Invalid, l.Name)
		case seen[name]:
		case !ok:
			d.Add = append(d.Add, domain.Tool{Name: name, Server: server, ReadOnly: l.ReadOnly, Description: domain.ToolDescriptionOf(l.Description), Pin: l.Pin})
		case t.Server != server:
			d.Elsewhere = append(d.Elsewhere, name)
		case t.Pin.Digest != "" && (l.Pin.Digest != t.Pin.Digest || t.Pin.Drifted()):
			d.Changed = append(d.Changed, name)
			if l.Pin.Digest != t.Pin.Digest && l.Pin.Digest != t.Pin.ChangedDigest {
				drifts = append(drifts, domain.Tool{Name: t.Name, Pin: l.Pin})
			}
		default:
			d.Unchanged = append(d.Unchanged, name)
			if t.Pin.Digest == "" {
				pins = append(pins, domain.Tool{Name: t.Name, Pin: l.Pin})
			}
		}
		seen[name] = true
	}
	for _, t := range tools {
		if t.Server == server && !seen[strings.ToLower(t.Name)] {
			d.Unlisted = append(d.Unlisted, t.Name)
		}
	}
	if !apply {
		return d, nil
	}
	for i := range d.Add {
		d.Add[i].CreatedAt = s.clock.Now().UTC()
		if err := s.catalog.CreateTool(ctx, d.Add[i]); err != nil {
			return d, err
		}
	}
	for _, t := range pins {
		if err := s.catalog.PinTool(ctx, t.Name, t.Pin.Definition, t.Pin.Digest); err != nil && !errors.Is(err, domain.ErrNotFound) {
			return d, err
		}
	}
	for _, t := range drifts {
		if err := s.catalog.RecordToolDrift(ctx, t.Name, t.Pin.Definition, t.Pin.Digest, s.clock.Now().UTC()); err != nil && !errors.Is(err, domain.ErrNotFound) {
			return d, err
		}
	}
	return d, nil
}
