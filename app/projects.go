package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Projects manages projects, the team unit: ADMIN all, a LEAD those it
// leads, members read theirs.
type Projects struct {
	store ports.ProjectStore
	authz *domain.Authorizer
	clock ports.Clock
}

// NewProjects wires the use case.
func NewProjects(store ports.ProjectStore, authz *domain.Authorizer, clock ports.Clock) *Projects {
	return &Projects{store: store, authz: authz, clock: clock}
}

// Create stores a new project. A caller without projects:manage (a LEAD)
// always becomes one of its leads, so it can manage what it created.
func (s *Projects) Create(ctx context.Context, p domain.Principal, name string, members []domain.Member) (domain.Project, error) {
	pr := domain.Project{ID: newID("prj_"), Name: strings.TrimSpace(name), Members: members, CreatedBy: p.Subject, CreatedAt: s.clock.Now().UTC()}
	if !s.authz.Allow(p, domain.PermProjectsManage).Allowed {
		pr.Members = withLead(members, p.Subject)
	}
	if err := domain.ValidateProject(pr); err != nil {
		return domain.Project{}, err
	}
	if err := s.store.CreateProject(ctx, pr); err != nil {
		return domain.Project{}, fmt.Errorf("create project: %w", err)
	}
	return pr, nil
}

// withLead returns members with subject as a lead.
func withLead(members []domain.Member, subject string) []domain.Member {
	out := make([]domain.Member, 0, len(members)+1)
	found := false
	for _, m := range members {
		if m.Subject == subject {
			m.Lead, found = true, true
		}
		out = append(out, m)
	}
	if !found {
		out = append(out, domain.Member{Subject: subject, Lead: true})
	}
	return out
}

// List returns a page of the projects the caller may see, newest first.
func (s *Projects) List(ctx context.Context, p domain.Principal, req PageRequest) (Page[domain.Project], error) {
	page, err := req.store()
	if err != nil {
		return Page[domain.Project]{}, err
	}
	f := ports.ProjectFilter{Member: p.Subject, Page: page}
	if s.authz.ProjectReadScope(p) == domain.ScopeAll {
		f.Member = ""
	}
	list, err := s.store.ListProjects(ctx, f)
	if err != nil {
		return Page[domain.Project]{}, err
	}
	return pageOf(list, page, func(pr domain.Project) ports.Cursor { return ports.CursorOf(pr.CreatedAt, pr.ID) }, nil), nil
}

// Get returns one project; one the caller may not see is not found.
func (s *Projects) Get(ctx context.Context, p domain.Principal, id string) (domain.Project, error) {
	pr, err := s.store.GetProject(ctx, id)
	if err != nil {
		return domain.Project{}, err
	}
	if !s.authz.CanReadProject(p, pr) {
		return domain.Project{}, fmt.Errorf("project %s: %w", id, domain.ErrNotVisible)
	}
	return pr, nil
}

// Members returns a page of the members of a project the caller may see,
// by subject (members have no creation time).
func (s *Projects) Members(ctx context.Context, p domain.Principal, id string, req PageRequest) (Page[domain.Member], error) {
	page, err := req.store()
	if err != nil {
		return Page[domain.Member]{}, err
	}
	if _, err := s.Get(ctx, p, id); err != nil {
		return Page[domain.Member]{}, err
	}
	list, err := s.store.ListMembers(ctx, id, page)
	if err != nil {
		return Page[domain.Member]{}, err
	}
	return pageOf(list, page, func(m domain.Member) ports.Cursor { return ports.CursorOf(time.Unix(0, 0).UTC(), m.Subject) }, nil), nil
}

// SetMembers replaces the members of a project the caller leads (or any,
// with projects:manage).
func (s *Projects) SetMembers(ctx context.Context, p domain.Principal, id string, members []domain.Member) (domain.Project, error) {
	pr, err := s.Get(ctx, p, id)
	if err != nil {
		return domain.Project{}, err
	}
	if err := s.authz.CanManageMembers(p, pr); err != nil {
		return domain.Project{}, err
	}
	pr.Members = members
	if err := domain.ValidateProject(pr); err != nil {
		return domain.Project{}, err
	}
	if err := s.store.SetMembers(ctx, id, members); err != nil {
		return domain.Project{}, err
	}
	return pr, nil
}
