package app

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Catalog registers tool servers and their tools, and lists the tools
// each caller's policy lets it use.
type Catalog struct {
	store    ports.CatalogStore
	policies *PolicyRules
	projects ports.ProjectStore
	authz    *domain.Authorizer
	clock    ports.Clock
}

// NewCatalog wires the use case.
func NewCatalog(store ports.CatalogStore, policies *PolicyRules, projects ports.ProjectStore, authz *domain.Authorizer, clock ports.Clock) *Catalog {
	return &Catalog{store: store, policies: policies, projects: projects, authz: authz, clock: clock}
}

// CreateServer registers an MCP-style server reachable at an http(s) URL,
// which its agent tokens name as their audience: a resource indicator
// (RFC 8707), so without fragment or user information. sv.Endpoint, when
// set, is its MCP endpoint (an http(s) URL) the gateway forwards to, and
// sv.Credential the name of the file holding the token the gateway
// presents there.
func (s *Catalog) CreateServer(ctx context.Context, sv domain.Server) (domain.Server, error) {
	if err := validServer(sv); err != nil {
		return domain.Server{}, err
	}
	sv.CreatedAt = s.clock.Now().UTC()
	if err := s.store.CreateServer(ctx, sv); err != nil {
		return domain.Server{}, err
	}
	return sv, nil
}

// validServer is every check of a server's registration, made and changed.
func validServer(sv domain.Server) error {
	if err := domain.ValidateName("server", sv.Name); err != nil {
		return err
	}
	if _, err := domain.CanonicalResource(sv.URL); err != nil {
		return fmt.Errorf("server url %q: want an http:// or https:// URL without fragment or user information: %w", sv.URL, domain.ErrInvalidInput)
	}
	if sv.Endpoint != "" {
		if err := httpURL("server endpoint", sv.Endpoint); err != nil {
			return err
		}
	}
	if err := domain.ValidateCredentialName(sv.Credential); err != nil {
		return err
	}
	if sv.Credential != "" && sv.Endpoint == "" {
		return fmt.Errorf("server credential: set the endpoint it is presented to: %w", domain.ErrInvalidInput)
	}
	return domain.ValidateServerAuth(sv)
}

// ServerChange is what a change of a server sets; nil leaves a field as
// it is (PATCH), a replacement sets every one (PUT).
type ServerChange struct {
	URL, Endpoint, Credential *string
	// SetUpstreamAuth sets UpstreamAuth (nil: none).
	SetUpstreamAuth bool
	UpstreamAuth    *domain.UpstreamAuth
}

// ChangeServer changes the registration of server name, validated as a
// new one is; never while a call of its tools waits for approval
// (domain.ErrConflict). A new URL is a new audience: the agent tokens
// minted for the old one are refused at its gateway endpoint.
func (s *Catalog) ChangeServer(ctx context.Context, name string, ch ServerChange) (before, after domain.Server, err error) {
	before, err = s.store.GetServer(ctx, name)
	if err != nil {
		return before, after, err
	}
	after = before
	if ch.URL != nil {
		after.URL = *ch.URL
	}
	if ch.Endpoint != nil {
		after.Endpoint = *ch.Endpoint
	}
	if ch.Credential != nil {
		after.Credential = *ch.Credential
	}
	if ch.SetUpstreamAuth {
		after.UpstreamAuth = ch.UpstreamAuth
	}
	if err := validServer(after); err != nil {
		return before, after, err
	}
	return before, after, s.store.UpdateServer(ctx, after)
}

// DeleteServer removes server name, once no tool is registered on it and
// no call of its tools waits for approval (domain.ErrConflict).
func (s *Catalog) DeleteServer(ctx context.Context, name string) error {
	return s.store.DeleteServer(ctx, name)
}

func httpURL(what, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return fmt.Errorf("%s %q: want an http:// or https:// URL without user information: %w", what, raw, domain.ErrInvalidInput)
	}
	return nil
}

// ServerSetUp is a server as its set-up page shows it: the tools
// registered on it, by name, and the rules that decide them.
type ServerSetUp struct {
	Server domain.Server
	Tools  []domain.Tool
	// Rules are the rules whose tool pattern matches one of Tools, newest
	// first.
	Rules []RuleOn
}

// RuleOn is a rule and the tools of one server its pattern matches.
type RuleOn struct {
	Rule  domain.PolicyRule
	Tools []string
}

// SetUp reads server name, its tools and the rules naming them.
func (s *Catalog) SetUp(ctx context.Context, name string) (ServerSetUp, error) {
	sv, err := s.store.GetServer(ctx, name)
	if err != nil {
		return ServerSetUp{}, err
	}
	all, err := s.store.ListTools(ctx, ports.Page{})
	if err != nil {
		return ServerSetUp{}, err
	}
	d := ServerSetUp{Server: sv}
	var names []string
	for _, t := range all {
		if t.Server == sv.Name {
			d.Tools = append(d.Tools, t)
			names = append(names, t.Name)
		}
	}
	slices.SortFunc(d.Tools, func(a, b domain.Tool) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(names)
	rules, err := s.policies.Naming(ctx, names)
	if err != nil {
		return ServerSetUp{}, err
	}
	for _, r := range rules {
		on := RuleOn{Rule: r}
		for _, n := range names {
			if domain.MatchTool(r.Tool, n) {
				on.Tools = append(on.Tools, n)
			}
		}
		d.Rules = append(d.Rules, on)
	}
	return d, nil
}

// ListServers returns a page of the registered servers, newest first.
func (s *Catalog) ListServers(ctx context.Context, req PageRequest) (Page[domain.Server], error) {
	page, err := req.store()
	if err != nil {
		return Page[domain.Server]{}, err
	}
	list, err := s.store.ListServers(ctx, page)
	if err != nil {
		return Page[domain.Server]{}, err
	}
	return pageOf(list, page, func(sv domain.Server) ports.Cursor { return ports.CursorOf(sv.CreatedAt, sv.Name) }, nil), nil
}

// CreateTool registers a tool of a registered server.
func (s *Catalog) CreateTool(ctx context.Context, t domain.Tool) (domain.Tool, error) {
	name, err := domain.CanonicalToolName(t.Name)
	if err != nil {
		return domain.Tool{}, err
	}
	t.Name = name
	if err := validTool(t); err != nil {
		return domain.Tool{}, err
	}
	t.CreatedAt = s.clock.Now().UTC()
	if err := s.store.CreateTool(ctx, t); err != nil {
		return domain.Tool{}, err
	}
	return t, nil
}

// validTool checks what a tool's registration says besides its name.
func validTool(t domain.Tool) error {
	if err := domain.ValidateName("server", t.Server); err != nil {
		return err
	}
	if err := t.Limit.Validate(); err != nil {
		return err
	}
	return domain.ValidateToolDescription(t.Description)
}

// ToolChange is what a change of a tool sets; nil leaves a field as it is
// (PATCH), a replacement sets every one (PUT).
type ToolChange struct {
	Server                   *string
	ReadOnly, SecondApprover *bool
	Description              *string
	Limit                    *domain.Limit
}

// ChangeTool changes the registration of tool name, validated as a new
// one is; never while a call of it waits for approval (domain.ErrConflict).
func (s *Catalog) ChangeTool(ctx context.Context, name string, ch ToolChange) (before, after domain.Tool, err error) {
	if name, err = domain.CanonicalToolName(name); err != nil {
		return before, after, err
	}
	if before, err = s.store.GetTool(ctx, name); err != nil {
		return before, after, err
	}
	after = before
	after.Name = name
	if ch.Server != nil {
		after.Server = *ch.Server
	}
	if ch.ReadOnly != nil {
		after.ReadOnly = *ch.ReadOnly
	}
	if ch.SecondApprover != nil {
		after.SecondApprover = *ch.SecondApprover
	}
	if ch.Description != nil {
		after.Description = *ch.Description
	}
	if ch.Limit != nil {
		after.Limit = *ch.Limit
	}
	if err := validTool(after); err != nil {
		return before, after, err
	}
	return before, after, s.store.UpdateTool(ctx, after)
}

// DeleteTool removes tool name, once no call of it waits for approval
// (domain.ErrConflict). Rules naming it stay: they name a pattern.
func (s *Catalog) DeleteTool(ctx context.Context, name string) error {
	name, err := domain.CanonicalToolName(name)
	if err != nil {
		return err
	}
	return s.store.DeleteTool(ctx, name)
}

// ListTools returns a page of the tools the caller may use, newest first:
// those no policy denies it (in any of its projects). Holders of
// policies:read see every tool.
func (s *Catalog) ListTools(ctx context.Context, p domain.Principal, req PageRequest) (Page[domain.Tool], error) {
	page, err := req.store()
	if err != nil {
		return Page[domain.Tool]{}, err
	}
	tools, err := s.store.ListTools(ctx, page)
	if err != nil {
		return Page[domain.Tool]{}, err
	}
	at := func(t domain.Tool) ports.Cursor { return ports.CursorOf(t.CreatedAt, t.Name) }
	if s.authz.Allow(p, domain.PermPoliciesRead).Allowed {
		return pageOf(tools, page, at, nil), nil
	}
	policy, err := s.policies.Index(ctx)
	if err != nil {
		return Page[domain.Tool]{}, err
	}
	team, err := teamOf(ctx, s.projects, p)
	if err != nil {
		return Page[domain.Tool]{}, err
	}
	subj := domain.Subject{Subject: p.Subject, Roles: s.authz.PolicyRoles(p.Roles), Projects: team.Member}
	return pageOf(tools, page, at, func(t domain.Tool) bool { return policy.Evaluate(subj, t.Name).Effect != domain.EffectDeny }), nil
}
