package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// Tool-call reason codes, one per step that can decide.
const (
	ReasonSessionClosed    = "session_closed"
	ReasonGatewayUnknown   = "gateway_unregistered_tool"
	ReasonNoPolicyRule     = "no_policy_rule"
	ReasonPolicyDeny       = "policy_deny"
	ReasonPolicyAsk        = "policy_ask"
	ReasonPolicyAllow      = "policy_allow"
	ReasonModeReadonly     = "mode_readonly"
	ReasonModeAsk          = "mode_ask"
	ReasonAgentToolMissing = "agent_tool_not_permitted"
	ReasonAgentReadonly    = "agent_readonly"
	ReasonAgentAsk         = "agent_ask"
	// ReasonSecondApprover: the tool's calls must be approved by someone
	// other than the session's owner.
	ReasonSecondApprover = "approval_needs_second_person"
)

// ToolCallInput is everything a tool-call decision depends on.
type ToolCallInput struct {
	Principal Principal
	Session   Session
	Agent     Agent
	Tool      string
	// Registered is the tool as registered, or nil when no registered
	// server offers it.
	Registered *Tool
	Gateway    bool
	// Policy holds the policy rules as they stand; nil holds none.
	Policy *PolicyIndex
	// Arguments are the call's arguments: the RFC 8785 canonical JSON of
	// an object (see ArgumentsHash), what an approval binds to; nil when
	// no call is made (listing the tools a caller may call).
	Arguments []byte
	// Server is the server the call goes to ("": the registered tool's);
	// Chain the agents from the session's root to the acting agent
	// (nil: the acting agent alone); Now the time of the request. Rule
	// conditions read them (CallFacts).
	Server string
	Chain  []string
	Now    time.Time
}

// Facts is what the conditions of rules see of the call.
func (in ToolCallInput) Facts(roles []Role) *CallFacts {
	f := &CallFacts{Tool: in.Tool, Server: in.Server, Arguments: in.Arguments, SessionMode: in.Session.Mode,
		Project: in.Session.Project, Depth: in.Agent.Depth, Subject: in.Principal.Subject, Roles: roles, Now: in.Now}
	if f.Server == "" && in.Registered != nil {
		f.Server = in.Registered.Server
	}
	chain := in.Chain
	if chain == nil && in.Agent.ID != "" {
		chain = []string{in.Agent.ID}
	}
	f.Chain = append(append(make([]string, 0, len(chain)+1), in.Principal.Subject), chain...)
	return f
}

// MaxArgumentsBytes bounds the canonical arguments of a call that is
// stored: an approver reads them whole, and the store keeps them whole.
const MaxArgumentsBytes = 64 << 10

// ReasonArgumentsTooLarge: a call that would wait for approval has
// arguments over MaxArgumentsBytes, more than an approver can be shown.
const ReasonArgumentsTooLarge = "arguments_too_large"

// ToolDecision is the outcome of a tool call with its explanation.
type ToolDecision struct {
	Effect  Effect
	Reason  string // a Reason* code
	Rule    string // the deciding policy rule, if any
	Message string
	// RetryAt is when a call refused quota_exceeded may be made again.
	RetryAt time.Time
}

// DecideToolCall runs the steps in order: role, policy (with the security
// gateway), session mode, agent limits. The first step that denies
// decides; otherwise the first that asks; otherwise the call is allowed on
// the policy's word. An unregistered tool counts as not read-only.
func (a *Authorizer) DecideToolCall(in ToolCallInput) ToolDecision {
	if d := a.Allow(in.Principal, PermToolCallsWrite); !d.Allowed {
		return ToolDecision{Effect: EffectDeny, Reason: d.ReasonCode(), Message: d.Reason()}
	}
	if !in.Principal.Key.AllowsTool(in.Tool) {
		return ToolDecision{Effect: EffectDeny, Reason: ReasonKeyTool,
			Message: "key " + in.Principal.Key.ID + " is limited to tools " + strings.Join(in.Principal.Key.Tools, ", ")}
	}
	if in.Session.State == SessionClosed {
		return ToolDecision{Effect: EffectDeny, Reason: ReasonSessionClosed, Message: "session " + in.Session.ID + " is closed"}
	}
	if in.Gateway && in.Registered == nil {
		return ToolDecision{Effect: EffectDeny, Reason: ReasonGatewayUnknown,
			Message: "the security gateway is on and no registered server offers tool " + in.Tool}
	}
	if d := driftStep(in.Registered); d != nil {
		return *d
	}
	var projects []string
	if in.Session.Project != "" {
		projects = []string{in.Session.Project}
	}
	roles := a.PolicyRoles(in.Principal.Roles)
	var facts *CallFacts
	if in.Policy.Conditions() > 0 {
		facts = in.Facts(roles)
	}
	pol := in.Policy.EvaluateCall(Subject{Subject: in.Principal.Subject, Roles: roles, Projects: projects}, in.Tool, facts)
	readOnly := in.Registered != nil && in.Registered.ReadOnly

	var ask *ToolDecision
	steps := []ToolDecision{policyStep(pol, in.Tool)}
	steps = append(steps, modeStep(in.Session.Mode, readOnly, in.Tool)...)
	steps = append(steps, agentSteps(in.Agent, readOnly, in.Tool)...)
	for i := range steps {
		switch steps[i].Effect {
		case EffectDeny:
			return steps[i]
		case EffectAsk:
			if ask == nil {
				ask = &steps[i]
			}
		}
	}
	if ask != nil {
		return *ask
	}
	return steps[0]
}

// RecheckApproval re-runs, for a pending call about to be approved, the
// steps that do not depend on the requester's roles: session state,
// security gateway, deny rules for the requester (in.Principal.Subject) or
// the session's project, session mode and agent limits, as they stand now.
// Rules about roles cannot be re-checked: a call does not keep the roles it
// was asked with. It returns the step that now denies (the approval must
// then fail), or nil.
func RecheckApproval(in ToolCallInput) *ToolDecision {
	if in.Session.State == SessionClosed {
		return &ToolDecision{Effect: EffectDeny, Reason: ReasonSessionClosed, Message: "session " + in.Session.ID + " is closed"}
	}
	if in.Gateway && in.Registered == nil {
		return &ToolDecision{Effect: EffectDeny, Reason: ReasonGatewayUnknown,
			Message: "the security gateway is on and no registered server offers tool " + in.Tool}
	}
	if d := driftStep(in.Registered); d != nil {
		return d
	}
	who := Subject{Subject: in.Principal.Subject}
	if in.Session.Project != "" {
		who.Projects = []string{in.Session.Project}
	}
	var facts *CallFacts
	if in.Policy.Conditions() > 0 {
		facts = in.Facts(in.Principal.Roles)
	}
	if out, ok := in.Policy.denyingNotByRole(who, in.Tool, facts); ok {
		d := policyStep(out, in.Tool)
		return &d
	}
	readOnly := in.Registered != nil && in.Registered.ReadOnly
	steps := append(modeStep(in.Session.Mode, readOnly, in.Tool), agentSteps(in.Agent, readOnly, in.Tool)...)
	for i := range steps {
		if steps[i].Effect == EffectDeny {
			return &steps[i]
		}
	}
	return nil
}

func policyStep(pol PolicyOutcome, tool string) ToolDecision {
	var why string
	if pol.When != "" {
		why = " (its condition " + pol.When + " holds)"
		if pol.Maybe {
			why = " (when its condition " + pol.When + " holds)"
		}
	}
	switch {
	case pol.Rule == "":
		return ToolDecision{Effect: EffectDeny, Reason: ReasonNoPolicyRule, Message: "no policy rule allows tool " + tool}
	case pol.Error != "":
		return ToolDecision{Effect: EffectDeny, Reason: ReasonPolicyConditionError, Rule: pol.Rule,
			Message: "policy rule " + pol.Rule + "'s condition " + pol.When + " could not be evaluated for this call of tool " + tool + ", so it is denied: " + pol.Error}
	case pol.Effect == EffectDeny:
		return ToolDecision{Effect: EffectDeny, Reason: ReasonPolicyDeny, Rule: pol.Rule, Message: "policy rule " + pol.Rule + " denies tool " + tool + why}
	case pol.Effect == EffectAsk:
		return ToolDecision{Effect: EffectAsk, Reason: ReasonPolicyAsk, Rule: pol.Rule, Message: "policy rule " + pol.Rule + " requires approval for tool " + tool + why}
	}
	return ToolDecision{Effect: EffectAllow, Reason: ReasonPolicyAllow, Rule: pol.Rule, Message: "policy rule " + pol.Rule + " allows tool " + tool + why}
}

func modeStep(mode SessionMode, readOnly bool, tool string) []ToolDecision {
	switch {
	case mode == ModeAuto:
		return nil
	case mode == ModeAsk:
		return []ToolDecision{{Effect: EffectAsk, Reason: ReasonModeAsk, Message: "the session is in ask mode: every tool call needs approval"}}
	case mode == ModeReadonly && readOnly:
		return nil
	}
	// readonly with a tool that is not read-only, or an unknown mode: fail closed.
	return []ToolDecision{{Effect: EffectDeny, Reason: ReasonModeReadonly, Message: "the session is read-only and tool " + tool + " is not"}}
}

func agentSteps(ag Agent, readOnly bool, tool string) []ToolDecision {
	var out []ToolDecision
	if !ag.Limits.PermitsTool(tool) {
		out = append(out, ToolDecision{Effect: EffectDeny, Reason: ReasonAgentToolMissing, Message: "agent " + ag.ID + " may not use tool " + tool})
	}
	if ag.Limits.ReadOnly && !readOnly {
		out = append(out, ToolDecision{Effect: EffectDeny, Reason: ReasonAgentReadonly, Message: "agent " + ag.ID + " is read-only and tool " + tool + " is not"})
	}
	if ag.Limits.Approval {
		out = append(out, ToolDecision{Effect: EffectAsk, Reason: ReasonAgentAsk, Message: "agent " + ag.ID + " needs approval for every tool call"})
	}
	return out
}

// ToolCallStatus is where a tool call stands.
type ToolCallStatus string

// Tool-call statuses. Only pending calls can be approved, rejected or
// withdrawn; a withdrawn call is one nobody waits for any more (its
// caller gave up, went away, or its wait ended), and cannot be approved.
const (
	CallAllowed   ToolCallStatus = "allowed"
	CallDenied    ToolCallStatus = "denied"
	CallPending   ToolCallStatus = "pending"
	CallApproved  ToolCallStatus = "approved"
	CallRejected  ToolCallStatus = "rejected"
	CallWithdrawn ToolCallStatus = "withdrawn"
)

// StatusOf is the initial status of a call decided with effect e.
func StatusOf(e Effect) ToolCallStatus {
	switch e {
	case EffectAllow:
		return CallAllowed
	case EffectAsk:
		return CallPending
	}
	return CallDenied
}

// ToolCall is a stored tool-call decision and, for ask, its resolution.
type ToolCall struct {
	ID          string
	Session     string
	Agent       string
	Tool        string
	Decision    ToolDecision
	Status      ToolCallStatus
	RequestedBy string
	CreatedAt   time.Time
	ResolvedBy  string
	ResolvedAt  time.Time
	// Arguments are the RFC 8785 canonical JSON of the call's arguments
	// (nil for a call stored before they were kept), and ArgsHash their
	// hex SHA-256 (ArgumentsHash): an approval holds for these arguments
	// only. What is stored is what was hashed.
	Arguments []byte
	ArgsHash  string
	// UsedAt is when the gateway forwarded an approved call; an approval
	// is used once.
	UsedAt time.Time
	// Waiter names who waits for a pending call's outcome through the
	// gateway (a digest of its MCP session and request id; "" for a call
	// of the API), and WaitUntil when the wait ends (zero: it does not).
	// Once nobody waits, the call is withdrawn: nothing is ever forwarded
	// without a waiter to receive the result.
	Waiter    string
	WaitUntil time.Time
	// ToolDigest is the digest of the tool's pinned definition when the
	// call was asked for ("": none was pinned): an approval holds for that
	// definition only.
	ToolDigest string
}

// Abandoned reports whether c is a pending call whose wait ended before
// now: it can only be withdrawn.
func (c ToolCall) Abandoned(now time.Time) bool {
	return c.Status == CallPending && !c.WaitUntil.IsZero() && now.After(c.WaitUntil)
}

// ArgumentsHash is the hex SHA-256 of canonical, the RFC 8785 canonical
// JSON of a call's arguments: what an approval binds to.
func ArgumentsHash(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// Approval is a tool call waiting for a person, or just resolved, with what
// that person is shown to decide it: the call (its arguments, who asked,
// the rule that asked), its session, its agent chain and the tool as
// registered.
type Approval struct {
	Call    ToolCall
	Session Session
	// Chain is the agent chain, the root agent first and the calling
	// agent last; nil when the agent is gone. ChainNames are their names,
	// in the same order ("" for an agent without one).
	Chain, ChainNames []string
	// Names are the names agentauth knows of the people the approval
	// names (the session's owner, who asked, who resolved), by subject:
	// labels shown beside the subjects, never in their place.
	Names map[string]string
	// Tool is the tool as registered (its description); nil when no
	// server registers it.
	Tool *Tool
}

// ExplainPolicy is the policy step of a decision for s and a call (f, with
// f.Tool) and what each rule matching it said: which rule decides and why.
func ExplainPolicy(ix *PolicyIndex, s Subject, f *CallFacts) (ToolDecision, []RuleStep) {
	out, steps := ix.Explain(s, f.Tool, f)
	return policyStep(out, f.Tool), steps
}
