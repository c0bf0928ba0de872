package domain

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Project is the team unit: sessions belong to a project, and a project's
// leads manage its members and its sessions.
type Project struct {
	ID        string
	Name      string
	Members   []Member
	CreatedBy string
	CreatedAt time.Time
}

// Member is one subject's membership of a project.
type Member struct {
	Subject string
	Lead    bool
}

// IsMember reports whether subject belongs to the project (leads included).
func (p Project) IsMember(subject string) bool {
	return slices.ContainsFunc(p.Members, func(m Member) bool { return m.Subject == subject })
}

// IsLead reports whether subject leads the project.
func (p Project) IsLead(subject string) bool {
	return slices.ContainsFunc(p.Members, func(m Member) bool { return m.Subject == subject && m.Lead })
}

const maxProjectName = 100

// ValidateProject checks a project's name and members: a non-empty name, no
// subject listed twice, no empty subject.
func ValidateProject(p Project) error {
	name := strings.TrimSpace(p.Name)
	if name == "" || utf8.RuneCountInString(name) > maxProjectName {
		return fmt.Errorf("project name must have 1 to %d characters: %w", maxProjectName, ErrInvalidInput)
	}
	seen := map[string]bool{}
	for _, m := range p.Members {
		if strings.TrimSpace(m.Subject) == "" {
			return fmt.Errorf("project member with an empty subject: %w", ErrInvalidInput)
		}
		if seen[m.Subject] {
			return fmt.Errorf("project member %q is listed twice: %w", m.Subject, ErrInvalidInput)
		}
		seen[m.Subject] = true
	}
	return nil
}

// Team is what a subject's project memberships mean for access: the
// projects it belongs to and those it leads, by ID.
type Team struct {
	Member []string
	Leads  []string
}

// TeamOf derives subject's team from the projects it belongs to.
func TeamOf(subject string, projects []Project) Team {
	var t Team
	for _, p := range projects {
		if p.IsMember(subject) {
			t.Member = append(t.Member, p.ID)
		}
		if p.IsLead(subject) {
			t.Leads = append(t.Leads, p.ID)
		}
	}
	return t
}

// InProject reports whether the team includes project (as member or lead).
func (t Team) InProject(project string) bool {
	return project != "" && slices.Contains(t.Member, project)
}

// LeadsProject reports whether the team leads project.
func (t Team) LeadsProject(project string) bool {
	return project != "" && slices.Contains(t.Leads, project)
}

// ProjectReadScope is ScopeAll for holders of projects:audit or
// projects:manage; everyone else sees the projects it belongs to.
func (a *Authorizer) ProjectReadScope(p Principal) SessionScope {
	if a.Allow(p, PermProjectsManage).Allowed || a.Allow(p, PermProjectsAudit).Allowed {
		return ScopeAll
	}
	return ScopeOwn
}

// CanReadProject reports whether p may see project pr.
func (a *Authorizer) CanReadProject(p Principal, pr Project) bool {
	return pr.IsMember(p.Subject) || a.ProjectReadScope(p) == ScopeAll
}

// CanManageMembers allows holders of projects:manage, and holders of
// projects:write who lead pr.
func (a *Authorizer) CanManageMembers(p Principal, pr Project) error {
	if a.Allow(p, PermProjectsManage).Allowed {
		return nil
	}
	if a.Allow(p, PermProjectsWrite).Allowed && pr.IsLead(p.Subject) {
		return nil
	}
	return refuse(ReasonNotProjectLead, PermProjectsManage,
		"only a lead of project "+pr.ID+" with projects:write, or a holder of projects:manage, may change its members")
}
