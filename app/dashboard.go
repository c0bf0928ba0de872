package app

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"

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
	Projects []string
	// SessionsTotal, ByState and ByOwner count the newest
	// DashboardSessions sessions covered; SessionsCapped says there are
	// older ones, not counted.
	SessionsTotal  int
	SessionsCapped bool
	ByState        map[domain.SessionState]int
	// ByOwner names at most DashboardOwners owners, those with the most
	// sessions counted (ties by subject); OwnersCapped says others had
	// sessions too.
	ByOwner      map[string]int
	OwnersCapped bool
	// RecentDenials are the latest refused requests, newest first: all of
	// them for an ADMIN; for a LEAD those about the resources of the
	// projects it leads (the projects and their sessions), whoever made
	// them, and nothing else, not even other requests of its members.
	RecentDenials []domain.AuditRecord
}

// The dashboard's bounds: however many sessions it covers, a request reads
// at most DashboardSessions+1 of them (one page of the store's index) and
// answers at most DashboardOwners owners.
const (
	DashboardSessions = 10_000
	DashboardOwners   = 50
)

// recentDenials bounds the denials shown, and how far back they are sought.
const (
	recentDenials = 20
	denialScan    = 500
)

// Get builds the view for the caller.
func (d *Dashboard) Get(ctx context.Context, p domain.Principal) (DashboardView, error) {
	v := DashboardView{ByState: map[domain.SessionState]int{}, ByOwner: map[string]int{}, RecentDenials: []domain.AuditRecord{}}
	all := d.authz.Allow(p, domain.PermSessionsManage).Allowed
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
		}
		if len(v.Projects) == 0 {
			return v, nil // leads nothing: nothing to show, and never everything
		}
	}
	list, err := d.sessions.ListSessions(ctx, ports.SessionFilter{Projects: v.Projects, Page: ports.Page{Limit: DashboardSessions + 1}})
	if err != nil {
		return DashboardView{}, err
	}
	if len(list) > DashboardSessions {
		list, v.SessionsCapped = list[:DashboardSessions], true
	}
	sessionIDs := make(map[string]bool, len(list))
	for _, s := range list {
		sessionIDs[s.ID] = true
		v.SessionsTotal++
		v.ByState[s.State]++
		v.ByOwner[s.Owner]++
	}
	v.ByOwner, v.OwnersCapped = topOwners(v.ByOwner)
	recs, err := d.audit.QueryAudit(ctx, ports.AuditQuery{Decision: domain.AuditDeny, Limit: denialScan})
	if err != nil {
		return DashboardView{}, err
	}
	for _, r := range recs {
		if len(v.RecentDenials) == recentDenials {
			break
		}
		if all || concerns(r.Path, v.Projects, sessionIDs) {
			v.RecentDenials = append(v.RecentDenials, r)
		}
	}
	return v, nil
}

// topOwners keeps the DashboardOwners owners with the most sessions (ties
// by subject) and reports whether it dropped any.
func topOwners(by map[string]int) (map[string]int, bool) {
	if len(by) <= DashboardOwners {
		return by, false
	}
	owners := slices.SortedFunc(maps.Keys(by), func(a, b string) int {
		if c := cmp.Compare(by[b], by[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	top := make(map[string]int, DashboardOwners)
	for _, o := range owners[:DashboardOwners] {
		top[o] = by[o]
	}
	return top, true
}

// concerns reports whether an audited request path is about one of the
// given projects or sessions: /api/v2/projects/{id}… or
// /api/v2/sessions/{id}…, spelt exactly as the routes are (a path spelt
// otherwise is not shown: failing closed).
func concerns(path string, projects []string, sessions map[string]bool) bool {
	path, _, _ = strings.Cut(path, "?") // the record keeps the query too
	rest, ok := strings.CutPrefix(path, "/api/v2/")
	if !ok {
		return false
	}
	kind, rest, _ := strings.Cut(rest, "/")
	id, _, _ := strings.Cut(rest, "/")
	switch kind {
	case "projects":
		return id != "" && slices.Contains(projects, id)
	case "sessions":
		return sessions[id]
	}
	return false
}
