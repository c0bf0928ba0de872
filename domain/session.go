package domain

import (
	"fmt"
	"strings"
	"time"
)

// SessionMode governs what the agents of a session may do with tools.
type SessionMode string

// Session modes, from strictest to loosest.
const (
	ModeReadonly SessionMode = "readonly" // only read-only tools
	ModeAsk      SessionMode = "ask"      // every tool call needs approval
	ModeAuto     SessionMode = "auto"     // what policy allows runs
)

// ParseSessionMode accepts a known mode name.
func ParseSessionMode(s string) (SessionMode, error) {
	switch m := SessionMode(s); m {
	case ModeReadonly, ModeAsk, ModeAuto:
		return m, nil
	}
	return "", fmt.Errorf("session mode %q: want readonly, ask or auto: %w", s, ErrInvalidInput)
}

// SessionState is where an agent session is in its life.
type SessionState string

// Session states.
const (
	SessionActive SessionState = "active"
	SessionClosed SessionState = "closed"
)

// Session is an agent session owned by one subject.
type Session struct {
	ID        string
	Owner     string
	Project   string
	Title     string
	Mode      SessionMode
	State     SessionState
	CreatedAt time.Time
	// OwnerRoles are the roles the owner held when it created the session:
	// what the session may do is bounded by them, whoever manages it (an
	// agent token minted by a LEAD or an ADMIN is never wider). Empty for
	// sessions created before they were recorded.
	OwnerRoles []Role
}

// SessionScope is how much of a table a principal may see.
type SessionScope int

// Scopes, from narrowest to widest.
const (
	ScopeOwn  SessionScope = iota // only what the principal owns (or, for projects, belongs to)
	ScopeTeam                     // its own, and everything in the projects it leads
	ScopeAll                      // everything
)

// SessionReadScope returns how widely p may read sessions: every
// session with sessions:audit or sessions:manage; with sessions:team also
// those of the projects one leads; else only the caller's own.
func (a *Authorizer) SessionReadScope(p Principal) SessionScope {
	switch {
	case a.Allow(p, PermSessionsManage).Allowed || a.Allow(p, PermSessionsAudit).Allowed:
		return ScopeAll
	case a.Allow(p, PermSessionsTeam).Allowed:
		return ScopeTeam
	}
	return ScopeOwn
}

// CanManageSession reports whether p may change or delete s without
// knowing p's projects: its owner, or a holder of sessions:manage.
func (a *Authorizer) CanManageSession(p Principal, s Session) bool {
	return a.CheckManageSession(p, Team{}, s) == nil
}

// CanReadSession reports whether p may see s without knowing p's projects.
func (a *Authorizer) CanReadSession(p Principal, s Session) bool {
	return a.CanReadSessionIn(p, Team{}, s)
}

// CanReadSessionIn reports whether p, whose team is t, may see s: its
// owner, a holder of sessions:audit or sessions:manage, or a holder of
// sessions:team who leads the session's project.
func (a *Authorizer) CanReadSessionIn(p Principal, t Team, s Session) bool {
	if !p.Key.AllowsProject(s.Project) {
		return false
	}
	switch a.SessionReadScope(p) {
	case ScopeAll:
		return true
	case ScopeTeam:
		if t.LeadsProject(s.Project) {
			return true
		}
	}
	return s.Owner == p.Subject
}

// leadsSession reports whether p manages s as the lead of its project.
func (a *Authorizer) leadsSession(p Principal, t Team, s Session) bool {
	return t.LeadsProject(s.Project) && a.Allow(p, PermSessionsTeam).Allowed
}

// CheckManageSession allows p to change s (delete it, add agents, decide
// its tool calls) when p holds sessions:manage, leads its project with
// sessions:team, or owns it with sessions:write. AUDITOR, which holds none
// of them, never writes.
func (a *Authorizer) CheckManageSession(p Principal, t Team, s Session) error {
	if !p.Key.AllowsProject(s.Project) {
		return refuseKeyProject(p.Key, s.Project)
	}
	switch {
	case a.Allow(p, PermSessionsManage).Allowed, a.leadsSession(p, t, s):
		return nil
	case s.Owner == p.Subject && a.Allow(p, PermSessionsWrite).Allowed:
		return nil
	}
	return refuse(ReasonNotSessionOwner, PermSessionsManage,
		"session "+s.ID+" belongs to another user and is not in a project you lead")
}

// CheckCreateSession allows p to create a session in project: anyone with
// sessions:write may create a personal session (no project) or one in a
// project it belongs to; holders of sessions:manage may use any project.
func (a *Authorizer) CheckCreateSession(p Principal, t Team, project string) error {
	if !p.Key.AllowsProject(project) {
		return refuseKeyProject(p.Key, project)
	}
	if project == "" || t.InProject(project) || a.Allow(p, PermSessionsManage).Allowed {
		return nil
	}
	return refuse(ReasonNotProjectMember, PermSessionsManage, "you are not a member of project "+project)
}

// restrictions are what a mode forbids: non-read-only tools, and running a
// tool without approval. Modes are compared by these sets, because
// readonly and ask are not stricter than one another: readonly runs
// read-only tools unasked, ask runs every tool once approved.
func (m SessionMode) restrictions() (readOnly, approval bool) {
	return m == ModeReadonly, m == ModeAsk
}

// AtLeastAsStrict reports whether next forbids everything cur forbids.
func AtLeastAsStrict(next, cur SessionMode) bool {
	nr, na := next.restrictions()
	cr, ca := cur.restrictions()
	return (nr || !cr) && (na || !ca)
}

// CheckSetMode allows a mode change: anyone who manages s may make it
// stricter; only the lead of its project (sessions:team) or a holder of
// sessions:manage may make it looser or change it sideways.
func (a *Authorizer) CheckSetMode(p Principal, t Team, s Session, next SessionMode) error {
	if err := a.CheckManageSession(p, t, s); err != nil {
		return err
	}
	if AtLeastAsStrict(next, s.Mode) || a.Allow(p, PermSessionsManage).Allowed || a.leadsSession(p, t, s) {
		return nil
	}
	return refuse(ReasonModeLoosening, PermSessionsTeam,
		"changing session "+s.ID+" from "+string(s.Mode)+" to "+string(next)+" loosens it; only a lead of its project or an ADMIN may")
}

// refuseKeyProject refuses a managed key acting outside the projects it
// was narrowed to.
func refuseKeyProject(k *KeyScope, project string) error {
	if project == "" {
		project = "(none: a personal session)"
	}
	return refuse(ReasonKeyProject, "", "key "+k.ID+" is limited to projects "+strings.Join(k.Projects, ", ")+", not "+project)
}
