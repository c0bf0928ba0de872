package domain

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// AgentGrant is what an agent token grants: one agent (with the chain of
// agents that created it) acting for a session's owner at one tool server,
// with at most these tools, until Expires.
type AgentGrant struct {
	ID      string // the token's jti
	Subject string // the session's owner
	// Chain is the delegation chain, the session's root agent first and the
	// acting agent last.
	Chain    []string
	Audience string // the tool server's registered name
	Session  string
	Mode     SessionMode
	Tools    []string // canonical, sorted
	// Ask are the tools among Tools whose calls a policy rule asked
	// approval for when the token was minted: a claim for tool servers that
	// verify offline. agentauth decides with the rules in force (see
	// DecideAgentCall).
	Ask      []string
	IssuedAt time.Time
	Expires  time.Time
}

// Agent is the acting agent: the last of the chain.
func (g AgentGrant) Agent() string { return g.Chain[len(g.Chain)-1] }

// Describe is the grant as the audit log records it: the chain (user →
// agent → sub-agents), the audience, the tools and the token's id.
func (g AgentGrant) Describe() string {
	// Without fmt: every request with an agent token writes one.
	var buf [512]byte
	b := append(append(buf[:0], "chain "...), g.Subject...)
	for _, a := range g.Chain {
		b = append(append(b, " → "...), a...)
	}
	b = append(append(append(b, "; audience "...), g.Audience...), "; tools ["...)
	for i, t := range g.Tools {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, t...)
	}
	b = append(append(append(append(b, "]; mode "...), g.Mode...), "; jti "...), g.ID...)
	b = g.Expires.UTC().AppendFormat(append(b, "; expires "...), time.RFC3339)
	return string(b)
}

// Reason codes of refused agent-token requests.
const (
	ReasonTokenAudienceUnknown = "token_audience_unknown"
	ReasonTokenToolOutOfReach  = "token_tool_out_of_reach"
	ReasonTokenNoTools         = "token_no_tools"
	ReasonTokenTTL             = "token_ttl_invalid"
	// ReasonTokenOwnerRolesUnknown: a manager other than the owner mints
	// for a session that predates recording its owner's roles, or an agent
	// token's call is decided while agentauth knows no roles of the owner.
	ReasonTokenOwnerRolesUnknown = "token_owner_roles_unknown"
	// ReasonTokenWider: an exchange asked for more than the parent token
	// holds (a tool it lacks, another audience).
	ReasonTokenWider = "token_wider_than_parent"
	// ReasonTokenDepth: the new sub-agent would be deeper than MaxAgentDepth.
	ReasonTokenDepth = "token_depth_exceeded"
	// ReasonTokenRevoked: what the token names is gone: its session was
	// deleted, an agent of its chain removed, or the chain changed.
	ReasonTokenRevoked = "token_revoked"
	// ReasonTokenExpired is agentverify's code of an expired token.
	ReasonTokenExpired = "token_expired"
	// ReasonTokenChainLoop: the stored chain of parents loops.
	ReasonTokenChainLoop = "token_chain_loop"
	// ReasonTokenGrantType: the token endpoint was asked for another grant.
	ReasonTokenGrantType = "unsupported_grant_type"
	// ReasonTokenTarget: an exchange named (by audience or resource) a
	// server other than its parent token's.
	ReasonTokenTarget = "token_target_mismatch"
	// ReasonTokenSubAgents: the session has as many sub-agents as
	// auth.agentTokens.maxSubAgents allows.
	ReasonTokenSubAgents = "token_subagent_limit"
)

// MethodAgentToken is how a caller that presented an agent token proved
// who it acts for.
const MethodAgentToken AuthMethod = "agent_token"

// NarrowTools returns the requested tools (nil: all of the parent's) when
// each is among the parent's; a wider request is refused, never narrowed
// in silence.
func NarrowTools(parent, requested []string) ([]string, error) {
	if requested == nil {
		return slices.Clone(parent), nil
	}
	out := []string{}
	for _, r := range requested {
		c, err := CanonicalToolName(r)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(parent, func(t string) bool { return SameTool(t, c) }) {
			return nil, RefuseToken(ReasonTokenWider, ErrForbidden, "tool %s is not in the parent token", c)
		}
		out = append(out, c)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil, RefuseToken(ReasonTokenNoTools, ErrInvalidInput, "ask for at least one tool, or none for all of the parent's")
	}
	return out, nil
}

// TokenRefusal is a refused agent-token request with its reason code; Err
// (ErrInvalidInput, ErrNotFound, ErrForbidden, ErrUnauthenticated) decides
// the status.
type TokenRefusal struct {
	Code    string
	Message string
	Err     error
}

func (e *TokenRefusal) Error() string { return e.Code + ": " + e.Message }
func (e *TokenRefusal) Unwrap() error { return e.Err }

// ReasonCode is the refusal's code, for the error body.
func (e *TokenRefusal) ReasonCode() string { return e.Code }

// RefuseToken builds a TokenRefusal.
func RefuseToken(code string, err error, format string, args ...any) *TokenRefusal {
	return &TokenRefusal{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// TokenLifetime reads a requested lifetime: empty is def, anything else a
// duration from 1s to max (a longer one is refused, not shortened).
func TokenLifetime(requested string, def, max time.Duration) (time.Duration, error) {
	if requested == "" {
		return min(def, max), nil
	}
	d, err := time.ParseDuration(requested)
	if err != nil || d < time.Second || d > max {
		return 0, RefuseToken(ReasonTokenTTL, ErrInvalidInput, "ttl %q: want a duration from 1s to %s", requested, max)
	}
	return d, nil
}

// TokenToolsInput is what the tools of an agent token depend on.
type TokenToolsInput struct {
	// Offered are the tools registered on the audience's server.
	Offered []Tool
	Agent   Agent
	Session Session
	Policy  *PolicyIndex
	// Subject is whom policy is evaluated for, as in a tool-call decision.
	Subject Subject
	// Owner, when set, is the session's owner with the roles it created the
	// session with: a tool must be allowed for it too, so that a token
	// minted by a LEAD or an ADMIN is never wider than the session.
	Owner *Subject
	// Requested is the caller's subset; nil: all of them.
	Requested []string
}

// TokenTools is TokenToolsAsk without the tools that need approval.
func TokenTools(in TokenToolsInput) ([]string, error) {
	tools, _, err := TokenToolsAsk(in)
	return tools, err
}

// TokenToolsAsk returns the tools a token may carry: the server's tools that
// the agent's limits permit, that a policy rule allows (or asks for) the
// subject, and, when the session or the agent is read-only, only the
// read-only ones. A requested tool outside that set is refused, never
// dropped; so is a token that would carry no tool.
func TokenToolsAsk(in TokenToolsInput) (tools, ask []string, err error) {
	reach := []string{}
	readOnly := in.Session.Mode == ModeReadonly || in.Agent.Limits.ReadOnly
	for _, t := range in.Offered {
		if !in.Agent.Limits.PermitsTool(t.Name) || (readOnly && !t.ReadOnly) {
			continue
		}
		out := in.Policy.Evaluate(in.Subject, t.Name)
		if in.Owner != nil {
			out = stricter(out, in.Policy.Evaluate(*in.Owner, t.Name))
		}
		if out.Rule == "" || out.Effect == EffectDeny {
			continue
		}
		reach = append(reach, t.Name)
		if out.Effect == EffectAsk {
			ask = append(ask, t.Name)
		}
	}
	slices.Sort(reach)
	slices.Sort(ask)
	if in.Requested == nil {
		if len(reach) == 0 {
			return nil, nil, RefuseToken(ReasonTokenNoTools, ErrForbidden, "agent %s may use none of the tools of this server", in.Agent.ID)
		}
		return reach, ask, nil
	}
	out := []string{}
	for _, r := range in.Requested {
		c, err := CanonicalToolName(r)
		if err != nil {
			return nil, nil, err
		}
		if !slices.ContainsFunc(reach, func(t string) bool { return SameTool(t, c) }) {
			return nil, nil, RefuseToken(ReasonTokenToolOutOfReach, ErrForbidden,
				"tool %s is not within the reach of agent %s on this server (its limits, the policy, the session's mode and the server's tools)", c, in.Agent.ID)
		}
		out = append(out, c)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil, nil, RefuseToken(ReasonTokenNoTools, ErrInvalidInput, "tools: ask for at least one tool, or leave tools out for all")
	}
	return out, Among(ask, out), nil
}

// Among returns the members of list that are in set, in list's order.
func Among(list, set []string) []string {
	var out []string
	for _, t := range list {
		if slices.ContainsFunc(set, func(s string) bool { return SameTool(s, t) }) {
			out = append(out, t)
		}
	}
	return out
}

// Reason codes of tool calls asked for with an agent token.
const (
	ReasonTokenToolNotGranted = "token_tool_not_granted"
	ReasonTokenPolicyAllow    = "token_policy_allow"
	// ReasonAgentTokenRoute: an agent token was presented to an endpoint
	// it does not open.
	ReasonAgentTokenRoute = "agent_token_not_accepted_here"
	// ReasonTokenOtherSession: the call names a session or agent other
	// than the token's.
	ReasonTokenOtherSession = "token_session_mismatch"
)

// DecideAgentCall decides a tool call asked for with an agent token:
// in.Principal is the session's owner with the roles it holds now (as a
// managed key's owner: see VerifiedAgent in app), and the call is decided
// as that owner's own call (DecideToolCall: its roles and the rules in
// force, session state, security gateway, session mode, the agent's
// limits) within what the token grants (its tools). A rule made, changed
// or removed after minting binds the next decision; so does an owner's
// demotion. The token's ask_tools are what a rule asked at minting, for
// verifiers that cannot ask agentauth; agentauth asks the rules in force.
// The reason and message name the rule that decided.
func (a *Authorizer) DecideAgentCall(in ToolCallInput, g AgentGrant) ToolDecision {
	if !slices.ContainsFunc(g.Tools, func(t string) bool { return SameTool(t, in.Tool) }) {
		return ToolDecision{Effect: EffectDeny, Reason: ReasonTokenToolNotGranted, Message: "the agent token does not grant tool " + in.Tool}
	}
	if len(in.Principal.Roles) == 0 {
		return ToolDecision{Effect: EffectDeny, Reason: ReasonTokenOwnerRolesUnknown,
			Message: "agentauth knows no roles of the session's owner " + in.Principal.Subject + " now, so none of its agents' calls is allowed"}
	}
	d := a.DecideToolCall(in)
	if d.Effect == EffectAllow && d.Reason == ReasonPolicyAllow {
		d.Reason = ReasonTokenPolicyAllow
		d.Message = "policy rule " + d.Rule + " allows tool " + in.Tool + " for " + in.Principal.Subject + " with roles [" +
			JoinRoles(in.Principal.Roles) + "] now, and the agent token grants it"
	}
	return d
}

// TokenToolsNow returns the tools (of a token) that owner, with the roles
// it holds now, may still use in session s: it holds toolcalls:write, and a
// rule in force allows or asks for each, none denies it. Session mode and
// agent limits are left to each call's decision.
func (a *Authorizer) TokenToolsNow(owner Principal, s Session, policy *PolicyIndex, tools []string) []string {
	if len(owner.Roles) == 0 || !a.Allow(owner, PermToolCallsWrite).Allowed {
		return nil
	}
	subj := Subject{Subject: owner.Subject, Roles: a.PolicyRoles(owner.Roles)}
	if s.Project != "" {
		subj.Projects = []string{s.Project}
	}
	var out []string
	for _, t := range tools {
		if o := policy.Evaluate(subj, t); o.Rule != "" && o.Effect != EffectDeny {
			out = append(out, t)
		}
	}
	return out
}

// stricter returns the outcome that allows less: no rule, then deny, then
// ask, then allow.
func stricter(a, b PolicyOutcome) PolicyOutcome {
	rank := func(o PolicyOutcome) int {
		switch {
		case o.Rule == "":
			return 0
		case o.Effect == EffectDeny:
			return 1
		case o.Effect == EffectAsk:
			return 2
		}
		return 3
	}
	if rank(b) < rank(a) {
		return b
	}
	return a
}

// CanonicalResource is a tool server's resource indicator (RFC 8707 §2,
// as the MCP authorization specification uses it): an absolute http(s)
// URL without fragment, scheme and host in lower case, without the
// scheme's default port, and without a path of "/" alone.
func CanonicalResource(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("resource %q: want an absolute http(s) URL without fragment or user: %w", raw, ErrInvalidInput)
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("resource %q: want an http(s) URL: %w", raw, ErrInvalidInput)
	}
	if port := u.Port(); port == "80" && u.Scheme == "http" || port == "443" && u.Scheme == "https" {
		u.Host = u.Hostname()
		if strings.Contains(u.Host, ":") {
			u.Host = "[" + u.Host + "]"
		}
	}
	if u.Path == "/" && u.RawQuery == "" {
		u.Path = ""
	}
	u.RawPath, u.ForceQuery = "", false
	return u.String(), nil
}

// SameResource reports whether two URLs name one resource (equal once
// canonical); an invalid one names none.
func SameResource(a, b string) bool {
	ca, err := CanonicalResource(a)
	if err != nil {
		return false
	}
	cb, err := CanonicalResource(b)
	return err == nil && ca == cb
}

// TokenAudienceIs reports whether an agent token's audience (its one aud
// value, as verified) is the registered server sv: exactly sv's canonical
// resource URL, as minted. A gateway in front of sv calls it so that a
// token minted for another server, for none, or naming sv otherwise (by
// its name, by a URL spelled differently) is refused.
func TokenAudienceIs(aud string, sv Server) bool {
	want, err := CanonicalResource(sv.URL)
	return err == nil && aud == want
}
