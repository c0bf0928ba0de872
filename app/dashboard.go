package app

import (
	"context"
	"slices"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Dashboard summarises sessions and recent denials: for an ADMIN (holder
// of sessions:manage) across the service, for a LEAD across the projects
// it leads.
type Dashboard struct {
	sessions ports.SessionStore
	projects ports.ProjectStore
	audit    ports.AuditStore
	authz    *domain.Authorizer
}

// NewDashboard wires the use case.
func NewDashboard(sessions ports.SessionStore, projects ports.ProjectStore, audit ports.AuditStore, authz *domain.Authorizer) *Dashboard {
	return &Dashboard{sessions: sessions, projects: projects, audit: audit, authz: authz}
}

// DashboardView is what the dashboard shows.
type DashboardView struct {
	// Projects are the projects covered; nil for the whole service.
	Projects      []string
	SessionsTotal int
	ByState       map[domain.SessionState]int
	ByOwner       map[string]int
	// RecentDenials are the latest refused requests of the covered
	// subjects (members of the covered projects), newest first.
	RecentDenials []domain.AuditRecord
}

// recentDenials bounds the denials shown, and how far back they are sought.
const (
	recentDenials = 20
	denialScan    = 500
)

// Get builds the view for the caller.
func (d *Dashboard) Get(ctx context.Context, p domain.Principal) (DashboardView, error) {
	v := DashboardView{ByState: map[domain.SessionState]int{}, ByOwner: map[string]int{}, RecentDenials: []domain.AuditRecord{}}
	all := d.authz.Decide(p.Roles, domain.PermSessionsManage).Allowed
	var members []string
	if !all {
		led, err := d.projects.ListProjects(ctx, ports.ProjectFilter{Member: p.Subject})
		if err != nil {
			return DashboardView{}, err
		}
		v.Projects = []string{}
		for _, pr := range led {
			if !pr.IsLead(p.Subject) {
				continue
			}
			v.Projects = append(v.Projects, pr.ID)
			for _, m := range pr.Members {
				members = append(members, m.Subject)
			}
		}
		if len(v.Projects) == 0 {
			return v, nil // leads nothing: nothing to show, and never everything
		}
	}
	list, err := d.sessions.ListSessions(ctx, ports.SessionFilter{Projects: v.Projects})
	if err != nil {
		return DashboardView{}, err
	}
	for _, s := range list {
		v.SessionsTotal++
		v.ByState[s.State]++
		v.ByOwner[s.Owner]++
	}
	recs, err := d.audit.QueryAudit(ctx, ports.AuditQuery{Decision: domain.AuditDeny, Limit: denialScan})
	if err != nil {
		return DashboardView{}, err
	}
	for _, r := range recs {
		if len(v.RecentDenials) == recentDenials {
			break
		}
		if all || slices.Contains(members, r.Subject) {
			v.RecentDenials = append(v.RecentDenials, r)
		}
	}
	return v, nil
}
