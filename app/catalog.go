package app

import (
	"context"
	"fmt"
	"net/url"

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
	if err := domain.ValidateName("server", sv.Name); err != nil {
		return domain.Server{}, err
	}
	if _, err := domain.CanonicalResource(sv.URL); err != nil {
		return domain.Server{}, fmt.Errorf("server url %q: want an http:// or https:// URL without fragment or user information: %w", sv.URL, domain.ErrInvalidInput)
	}
	if sv.Endpoint != "" {
		if err := httpURL("server endpoint", sv.Endpoint); err != nil {
			return domain.Server{}, err
		}
	}
	if err := domain.ValidateCredentialName(sv.Credential); err != nil {
		return domain.Server{}, err
	}
	if sv.Credential != "" && sv.Endpoint == "" {
		return domain.Server{}, fmt.Errorf("server credential: set the endpoint it is presented to: %w", domain.ErrInvalidInput)
	}
	sv.CreatedAt = s.clock.Now().UTC()
	if err := s.store.CreateServer(ctx, sv); err != nil {
		return domain.Server{}, err
	}
	return sv, nil
}

func httpURL(what, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return fmt.Errorf("%s %q: want an http:// or https:// URL without user information: %w", what, raw, domain.ErrInvalidInput)
	}
	return nil
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
	if err := domain.ValidateName("server", t.Server); err != nil {
		return domain.Tool{}, err
	}
	t.CreatedAt = s.clock.Now().UTC()
	if err := s.store.CreateTool(ctx, t); err != nil {
		return domain.Tool{}, err
	}
	return t, nil
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
