package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// AgentTokenLimits bound agent tokens: the longest lifetime a caller may
// ask for (auth.agentTokens.maxTTL), also the default, and how many
// sub-agents a session may hold (auth.agentTokens.maxSubAgents), so that
// one token cannot make sub-agents without end.
type AgentTokenLimits struct {
	MaxTTL       time.Duration
	MaxSubAgents int
}

// AgentTokens mints agent tokens: credentials of one agent of a session
// for one registered tool server, never wider than the agent, the policy
// and the session allow.
type AgentTokens struct {
	sessions *Sessions
	store    ports.SessionStore
	created  *Agents
	agents   ports.AgentStore
	catalog  ports.CatalogStore
	policies *PolicyRules
	authz    *domain.Authorizer
	signer   ports.AgentTokenSigner
	clock    ports.Clock
	limits   AgentTokenLimits
	// owners knows the roles of sessions' owners now (see ownerNow); nil
	// in hybrid mode.
	owners *APIKeys
}

// withOwners decides tokens with their owners' roles as owners keeps them.
func (s *AgentTokens) withOwners(owners *APIKeys) *AgentTokens {
	s.owners = owners
	return s
}

// ownerNow is the session's owner as its agents' calls are decided now.
func (s *AgentTokens) ownerNow(ctx context.Context, sess domain.Session) (domain.Principal, error) {
	return ownerNow(ctx, s.owners, sess)
}

// ownerNow is sess's owner as its agents' calls are decided now: with the
// roles the configuration gives it, else those it last authenticated with
// (APIKeys.OwnerNow), else, where agentauth keeps no record of them
// (hybrid mode), those it created the session with.
func ownerNow(ctx context.Context, owners *APIKeys, sess domain.Session) (domain.Principal, error) {
	roles, known, err := owners.OwnerNow(ctx, sess.Owner)
	if err != nil {
		return domain.Principal{}, err
	}
	if !known {
		roles = sess.OwnerRoles
	}
	return domain.Principal{Subject: sess.Owner, Roles: roles}, nil
}

// NewAgentTokens wires the use case.
func NewAgentTokens(sessions *Sessions, store ports.SessionStore, created *Agents, agents ports.AgentStore, catalog ports.CatalogStore,
	policies *PolicyRules, authz *domain.Authorizer, signer ports.AgentTokenSigner, clock ports.Clock, limits AgentTokenLimits) *AgentTokens {
	return &AgentTokens{sessions: sessions, store: store, created: created, agents: agents, catalog: catalog, policies: policies,
		authz: authz, signer: signer, clock: clock, limits: limits}
}

// MintRequest is what the session's manager asks for.
type MintRequest struct {
	Audience string   // a registered server's name or URL
	Tools    []string // nil: every tool within reach
	TTL      string   // "": the maximum
}

// Minted is a signed token and what it grants.
type Minted struct {
	Token string
	Grant domain.AgentGrant
}

// Mint issues a token for agent of session to whoever manages the session
// (its owner, its project's LEAD, an ADMIN). The policy is evaluated for
// the caller, as in a tool-call decision the caller would ask for.
func (s *AgentTokens) Mint(ctx context.Context, p domain.Principal, session, agent string, in MintRequest) (Minted, error) {
	sess, err := s.sessions.Manageable(ctx, p, session)
	if err != nil {
		return Minted{}, err
	}
	if sess.State == domain.SessionClosed {
		return Minted{}, domain.RefuseToken(domain.ReasonSessionClosed, domain.ErrForbidden, "session %s is closed", sess.ID)
	}
	ttl, err := domain.TokenLifetime(in.TTL, s.limits.MaxTTL, s.limits.MaxTTL)
	if err != nil {
		return Minted{}, err
	}
	ag, chain, err := s.chain(ctx, session, agent)
	if err != nil {
		return Minted{}, err
	}
	server, offered, err := s.server(ctx, in.Audience)
	if err != nil {
		return Minted{}, err
	}
	policy, err := s.policies.Index(ctx)
	if err != nil {
		return Minted{}, err
	}
	subj := domain.Subject{Subject: p.Subject, Roles: s.authz.PolicyRoles(p.Roles)}
	if sess.Project != "" {
		subj.Projects = []string{sess.Project}
	}
	input := domain.TokenToolsInput{Offered: offered, Agent: ag, Session: sess, Policy: policy, Subject: subj, Requested: in.Tools}
	if p.Subject == sess.Owner {
		// Its agents are decided with its roles: keep them current.
		if err := s.owners.Remember(ctx, p); err != nil {
			return Minted{}, err
		}
	} else {
		// Another manager mints: the session's owner bounds the token too.
		if len(sess.OwnerRoles) == 0 {
			return Minted{}, domain.RefuseToken(domain.ReasonTokenOwnerRolesUnknown, domain.ErrForbidden,
				"session %s was created before its owner's roles were recorded; only its owner may mint tokens for it", sess.ID)
		}
		owner := domain.Subject{Subject: sess.Owner, Roles: s.authz.PolicyRoles(sess.OwnerRoles), Projects: subj.Projects}
		input.Owner = &owner
	}
	tools, ask, err := domain.TokenToolsAsk(input)
	if err != nil {
		return Minted{}, err
	}
	aud, err := domain.CanonicalResource(server.URL)
	if err != nil {
		return Minted{}, domain.RefuseToken(domain.ReasonTokenAudienceUnknown, domain.ErrInvalidInput,
			"server %s has no valid resource URL to name as the token's audience: %v", server.Name, err)
	}
	now := s.clock.Now().UTC().Truncate(time.Second)
	g := domain.AgentGrant{ID: newID("tok_"), Subject: sess.Owner, Chain: chain, Audience: aud, Session: sess.ID,
		Mode: sess.Mode, Tools: tools, Ask: ask, IssuedAt: now, Expires: now.Add(ttl)}
	tok, err := s.signer.Sign(g)
	if err != nil {
		return Minted{}, err
	}
	return Minted{Token: tok, Grant: g}, nil
}

// chain is agentChain over the tokens' agent store.
func (s *AgentTokens) chain(ctx context.Context, session, agent string) (domain.Agent, []string, error) {
	return agentChain(ctx, s.agents, session, agent)
}

// agentChain returns agent of session and its delegation chain, the root
// agent first. A chain that loops or runs deeper than the cap is refused.
func agentChain(ctx context.Context, agents ports.AgentStore, session, agent string) (domain.Agent, []string, error) {
	links, err := agentLinks(ctx, agents, session, agent)
	if err != nil {
		return domain.Agent{}, nil, err
	}
	chain := make([]string, len(links))
	for i, a := range links {
		chain[i] = a.ID
	}
	return links[len(links)-1], chain, nil
}

// agentLinks returns the agents from the session's root to agent, as
// agentChain checks them.
func agentLinks(ctx context.Context, agents ports.AgentStore, session, agent string) ([]domain.Agent, error) {
	ag, err := agents.GetAgent(ctx, agent)
	if err == nil && ag.Session != session {
		err = fmt.Errorf("agent %s: %w", agent, domain.ErrNotVisible)
	}
	if err != nil {
		return nil, fmt.Errorf("agent of this session: %w", err)
	}
	links := []domain.Agent{ag}
	for cur := ag; cur.Parent != ""; {
		if len(links) > domain.MaxAgentDepth || slices.ContainsFunc(links, func(a domain.Agent) bool { return a.ID == cur.Parent }) {
			return nil, domain.RefuseToken(domain.ReasonTokenChainLoop, domain.ErrConflict,
				"agent %s: its chain of parents loops or is deeper than %d", agent, domain.MaxAgentDepth)
		}
		if cur, err = agents.GetAgent(ctx, cur.Parent); err != nil {
			return nil, fmt.Errorf("parent of agent %s: %w", agent, err)
		}
		links = append(links, cur)
	}
	slices.Reverse(links)
	return links, nil
}

// server finds the audience among the registered servers, by name or URL,
// with the tools it offers.
func (s *AgentTokens) server(ctx context.Context, audience string) (domain.Server, []domain.Tool, error) {
	servers, err := s.catalog.ListServers(ctx, ports.Page{})
	if err != nil {
		return domain.Server{}, nil, err
	}
	i := slices.IndexFunc(servers, func(sv domain.Server) bool {
		return audience != "" && (sv.Name == audience || domain.SameResource(sv.URL, audience))
	})
	if i < 0 {
		return domain.Server{}, nil, domain.RefuseToken(domain.ReasonTokenAudienceUnknown, domain.ErrNotFound,
			"audience %q is not the name or URL of a registered tool server", audience)
	}
	tools, err := s.catalog.ListTools(ctx, ports.Page{})
	if err != nil {
		return domain.Server{}, nil, err
	}
	var offered []domain.Tool
	for _, t := range tools {
		if t.Server == servers[i].Name {
			offered = append(offered, t)
		}
	}
	slices.SortFunc(offered, func(a, b domain.Tool) int { return strings.Compare(a.Name, b.Name) }) // a scope lists them by name
	return servers[i], offered, nil
}

// ExchangeRequest is an RFC 8693 token exchange: the parent agent's token
// for a token of a new sub-agent, never wider.
type ExchangeRequest struct {
	SubjectToken string
	// Audience (a registered server's name or URL) and Resource (its URL,
	// RFC 8707): "" is the parent's; another server is refused.
	Audience string
	Resource string
	Tools    []string // nil: the parent's
	TTL      string   // "": what the parent has left
}

// Exchanged is the child's token with its parent's grant.
type Exchanged struct {
	Minted
	Parent domain.AgentGrant
}

// Exchange checks the parent's token and what it names as it stands now
// (the session, the agent chain), creates the sub-agent as the agents API
// would, and signs its token: the parent's tools or fewer, the parent's
// audience and mode, and no later expiry than the parent's.
func (s *AgentTokens) Exchange(ctx context.Context, in ExchangeRequest) (Exchanged, error) {
	parent, err := s.signer.Verify(ctx, in.SubjectToken)
	if err != nil {
		return Exchanged{}, err
	}
	out := Exchanged{Parent: parent}
	sess, ag, err := s.live(ctx, parent)
	if err != nil {
		return out, err
	}
	if ag.Depth+1 > domain.MaxAgentDepth {
		return out, domain.RefuseToken(domain.ReasonTokenDepth, domain.ErrInvalidInput, "sub-agent chains are limited to %d levels", domain.MaxAgentDepth)
	}
	if err := s.sameTarget(ctx, parent, in); err != nil {
		return out, err
	}
	tools, err := domain.NarrowTools(parent.Tools, in.Tools)
	if err != nil {
		return out, err
	}
	// A rule made since the parent was minted, or the owner's demotion,
	// holds for the child.
	allowed, err := s.stillAllowed(ctx, sess, domain.AgentGrant{Subject: parent.Subject, Tools: tools})
	if err != nil {
		return out, err
	}
	if len(allowed) != len(tools) {
		return out, domain.RefuseToken(domain.ReasonPolicyDeny, domain.ErrForbidden, "policy now denies some of the tools %v to the session's owner (allowed: %v)", tools, allowed)
	}
	at := s.clock.Now().UTC().Truncate(time.Second)
	left := parent.Expires.Sub(at)
	if left < time.Second {
		// Verification tolerates clock skew; a child must still live.
		return out, domain.RefuseToken(domain.ReasonTokenExpired, domain.ErrUnauthenticated, "the parent token expires in under a second")
	}
	ttl, err := domain.TokenLifetime(in.TTL, left, left)
	if err != nil {
		return out, err
	}
	if err := s.roomForSubAgent(ctx, sess.ID); err != nil {
		return out, err
	}
	child, err := s.created.CreateDelegated(ctx, sess.ID, NewAgent{Parent: ag.ID, Tools: tools}, "agent:"+ag.ID)
	if err != nil {
		return out, err
	}
	g := domain.AgentGrant{ID: newID("tok_"), Subject: parent.Subject, Chain: append(slices.Clone(parent.Chain), child.ID),
		Audience: parent.Audience, Session: parent.Session, Mode: parent.Mode, Tools: tools, Ask: domain.Among(parent.Ask, tools), IssuedAt: at, Expires: at.Add(ttl)}
	tok, err := s.signer.Sign(g)
	if err != nil {
		return out, err
	}
	out.Minted = Minted{Token: tok, Grant: g}
	return out, nil
}

// sameTarget checks that the server an exchange names, by audience (name
// or URL) or resource (URL), is its parent token's.
func (s *AgentTokens) sameTarget(ctx context.Context, parent domain.AgentGrant, in ExchangeRequest) error {
	for _, want := range []struct{ value, param string }{{in.Audience, "audience"}, {in.Resource, "resource"}} {
		if want.value == "" {
			continue
		}
		servers, err := s.catalog.ListServers(ctx, ports.Page{})
		if err != nil {
			return err
		}
		i := slices.IndexFunc(servers, func(sv domain.Server) bool {
			return domain.SameResource(sv.URL, want.value) || want.param == "audience" && sv.Name == want.value
		})
		if i < 0 {
			return domain.RefuseToken(domain.ReasonTokenAudienceUnknown, domain.ErrNotFound, "%s %q is not a registered tool server", want.param, want.value)
		}
		if !domain.TokenAudienceIs(parent.Audience, servers[i]) {
			return domain.RefuseToken(domain.ReasonTokenTarget, domain.ErrForbidden, "the parent token is for %s, not %s", parent.Audience, want.value)
		}
	}
	return nil
}

// roomForSubAgent refuses a new sub-agent when the session holds
// MaxSubAgents. Concurrent exchanges may each pass the count; the bound
// holds within their number.
func (s *AgentTokens) roomForSubAgent(ctx context.Context, session string) error {
	if s.limits.MaxSubAgents <= 0 {
		return nil
	}
	n, err := s.agents.CountSubAgents(ctx, session)
	if err != nil {
		return err
	}
	if n >= s.limits.MaxSubAgents {
		return domain.RefuseToken(domain.ReasonTokenSubAgents, domain.ErrForbidden,
			"session %s holds %d sub-agents, the most auth.agentTokens.maxSubAgents allows", session, n)
	}
	return nil
}

// live checks that what a grant names still stands: its session (not
// deleted, not closed) and its chain of agents as stored.
func (s *AgentTokens) live(ctx context.Context, g domain.AgentGrant) (domain.Session, domain.Agent, error) {
	sess, err := s.store.GetSession(ctx, g.Session)
	if errors.Is(err, domain.ErrNotFound) {
		return sess, domain.Agent{}, domain.RefuseToken(domain.ReasonTokenRevoked, domain.ErrUnauthenticated, "session %s no longer exists", g.Session)
	}
	if err != nil {
		return sess, domain.Agent{}, err
	}
	if sess.State == domain.SessionClosed {
		return sess, domain.Agent{}, domain.RefuseToken(domain.ReasonSessionClosed, domain.ErrForbidden, "session %s is closed", sess.ID)
	}
	ag, chain, err := s.chain(ctx, g.Session, g.Agent())
	if errors.Is(err, domain.ErrNotFound) || errors.Is(err, domain.ErrNotVisible) || (err == nil && !slices.Equal(chain, g.Chain)) {
		return sess, domain.Agent{}, domain.RefuseToken(domain.ReasonTokenRevoked, domain.ErrUnauthenticated, "the token's chain of agents no longer stands")
	}
	return sess, ag, err
}

// VerifiedAgent is an authenticated agent token: its grant, and its session,
// acting agent and the session's owner (with its roles now, see ownerNow)
// as they stood when the token was checked. A decision of the same request
// takes them from here instead of reading them again.
type VerifiedAgent struct {
	Grant   domain.AgentGrant
	Session domain.Session
	Agent   domain.Agent
	Owner   domain.Principal
}

// Authenticate accepts an agent token as the credential of a request: its
// signature and lifetime, and what it names as it stands now. The grant is
// returned whenever the signature holds, for the audit record.
func (s *AgentTokens) Authenticate(ctx context.Context, token string) (VerifiedAgent, error) {
	g, err := s.signer.Verify(ctx, token)
	if err != nil {
		return VerifiedAgent{Grant: g}, err
	}
	sess, ag, err := s.live(ctx, g)
	if err != nil {
		return VerifiedAgent{Grant: g, Session: sess, Agent: ag}, err
	}
	owner, err := s.ownerNow(ctx, sess)
	return VerifiedAgent{Grant: g, Session: sess, Agent: ag, Owner: owner}, err
}

// Introspection is the answer of RFC 7662: the grant as it stands now, or
// why it is no longer active.
type Introspection struct {
	Active bool
	Grant  domain.AgentGrant
	// Reason is the code of an inactive token.
	Reason string
}

// Introspect answers whether token is active now: signed by this service,
// unexpired, its session present and open, its agent chain as stored, and
// at least one of its tools still allowed (or asked for) the session's
// owner by its roles now and the rules in force. The tools the owner may
// no longer use are left out of the answer.
func (s *AgentTokens) Introspect(ctx context.Context, token string) (Introspection, error) {
	g, err := s.signer.Verify(ctx, token)
	if err == nil {
		var sess domain.Session
		if sess, _, err = s.live(ctx, g); err == nil {
			g.Tools, err = s.stillAllowed(ctx, sess, g)
		}
	}
	var tr *domain.TokenRefusal
	if errors.As(err, &tr) {
		return Introspection{Grant: g, Reason: tr.Code}, nil
	}
	if err != nil {
		return Introspection{}, err
	}
	g.Ask = domain.Among(g.Ask, g.Tools)
	return Introspection{Active: true, Grant: g}, nil
}

// stillAllowed returns the grant's tools that the session's owner may
// still use: its roles now and the rules in force allow or ask for them.
func (s *AgentTokens) stillAllowed(ctx context.Context, sess domain.Session, g domain.AgentGrant) ([]string, error) {
	policy, err := s.policies.Index(ctx)
	if err != nil {
		return nil, err
	}
	owner, err := s.ownerNow(ctx, sess)
	if err != nil {
		return nil, err
	}
	out := s.authz.TokenToolsNow(owner, sess, policy, g.Tools)
	if len(out) == 0 {
		return nil, domain.RefuseToken(domain.ReasonPolicyDeny, domain.ErrForbidden, "policy now denies every tool of the token")
	}
	return out, nil
}
