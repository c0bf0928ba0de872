package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Sessions is the use case for agent sessions: create, list, read and
// delete, each limited to what the caller may see.
type Sessions struct {
	store    ports.SessionStore
	settings ports.SettingsStore
	authz    *domain.Authorizer
	clock    ports.Clock
	// projects make the use case project-aware: a USER creates sessions
	// only in its projects, a LEAD reads and manages those of projects it
	// leads; modes change a session's mode.
	projects ports.ProjectStore
	modes    ports.SessionModeStore
	// owners records the roles of whoever creates a session (see
	// APIKeys.Remember); nil in hybrid mode.
	owners *APIKeys
}

// NewSessions wires the use case.
func NewSessions(store ports.SessionStore, settings ports.SettingsStore, projects ports.ProjectStore, modes ports.SessionModeStore,
	authz *domain.Authorizer, clock ports.Clock) *Sessions {
	return &Sessions{store: store, settings: settings, projects: projects, modes: modes, authz: authz, clock: clock}
}

// NewSession is what a caller may set when creating a session.
type NewSession struct {
	Title   string
	Project string
	Mode    string // empty: the default mode from settings
}

const maxTitle = 200

// Create stores a new active session owned by the caller.
func (s *Sessions) Create(ctx context.Context, p domain.Principal, in NewSession) (domain.Session, error) {
	title := strings.TrimSpace(in.Title)
	if utf8.RuneCountInString(title) > maxTitle {
		return domain.Session{}, fmt.Errorf("title is longer than %d characters: %w", maxTitle, domain.ErrInvalidInput)
	}
	mode := domain.SessionMode(in.Mode)
	if in.Mode == "" {
		st, err := s.settings.GetSettings(ctx)
		if err != nil {
			return domain.Session{}, err
		}
		mode = st.DefaultSessionMode
	}
	if _, err := domain.ParseSessionMode(string(mode)); err != nil {
		return domain.Session{}, err
	}
	project := strings.TrimSpace(in.Project)
	team, err := teamOf(ctx, s.projects, p)
	if err != nil {
		return domain.Session{}, err
	}
	// Membership first: a missing project is refused like a foreign one, so
	// the answer does not tell which project IDs exist.
	if err := s.authz.CheckCreateSession(p, team, project); err != nil {
		return domain.Session{}, err
	}
	if project != "" {
		if _, err := s.projects.GetProject(ctx, project); err != nil {
			return domain.Session{}, err
		}
	}
	sess := domain.Session{
		ID:         newID("ses_"),
		Owner:      p.Subject,
		Project:    project,
		Title:      title,
		Mode:       mode,
		State:      domain.SessionActive,
		CreatedAt:  s.clock.Now().UTC(),
		OwnerRoles: p.Roles,
	}
	if err := s.owners.Remember(ctx, p); err != nil {
		return domain.Session{}, err
	}
	if err := s.store.CreateSession(ctx, sess); err != nil {
		return domain.Session{}, fmt.Errorf("create session: %w", err)
	}
	return sess, nil
}

// List returns a page of the sessions the caller may see, newest first.
func (s *Sessions) List(ctx context.Context, p domain.Principal, req PageRequest) (Page[domain.Session], error) {
	page, err := req.store()
	if err != nil {
		return Page[domain.Session]{}, err
	}
	f := ports.SessionFilter{Owner: p.Subject, Page: page}
	switch s.authz.SessionReadScope(p) {
	case domain.ScopeAll:
		f.Owner = ""
	case domain.ScopeTeam:
		team, err := teamOf(ctx, s.projects, p)
		if err != nil {
			return Page[domain.Session]{}, err
		}
		f.Projects = team.Leads
	}
	list, err := s.store.ListSessions(ctx, f)
	if err != nil {
		return Page[domain.Session]{}, err
	}
	var keep func(domain.Session) bool
	if p.Key != nil {
		// A managed key limited to projects sees only their sessions;
		// filtering changes the list in place, which may be kept in memory.
		keep = func(sess domain.Session) bool { return p.Key.AllowsProject(sess.Project) }
		list = slices.Clone(list)
	}
	return pageOf(list, page, sessionCursor, keep), nil
}

func sessionCursor(s domain.Session) ports.Cursor { return ports.CursorOf(s.CreatedAt, s.ID) }

// Get returns one session. A session the caller may not see is reported as
// not found, so its existence does not leak.
func (s *Sessions) Get(ctx context.Context, p domain.Principal, id string) (domain.Session, error) {
	sess, _, err := s.visible(ctx, p, id)
	return sess, err
}

// visible loads a session the caller may see, with the caller's team
// (empty for a personal session).
func (s *Sessions) visible(ctx context.Context, p domain.Principal, id string) (domain.Session, domain.Team, error) {
	sess, err := s.store.GetSession(ctx, id)
	if err != nil {
		return domain.Session{}, domain.Team{}, err
	}
	// A personal session is in no project, so no membership bears on it
	// (domain.Team answers false for project ""): the caller's projects
	// are read only for a session in one.
	var team domain.Team
	if sess.Project != "" {
		if team, err = teamOf(ctx, s.projects, p); err != nil {
			return domain.Session{}, domain.Team{}, err
		}
	}
	if !s.authz.CanReadSessionIn(p, team, sess) {
		return domain.Session{}, domain.Team{}, fmt.Errorf("session %s: %w", id, domain.ErrNotVisible)
	}
	return sess, team, nil
}

// Manageable loads a session the caller may change: one it may not see is
// not found, one it may see but not change is refused with the reason.
func (s *Sessions) Manageable(ctx context.Context, p domain.Principal, id string) (domain.Session, error) {
	sess, team, err := s.visible(ctx, p, id)
	if err != nil {
		return domain.Session{}, err
	}
	if err := s.authz.CheckManageSession(p, team, sess); err != nil {
		return domain.Session{}, err
	}
	return sess, nil
}

// SetMode changes a session's mode: stricter by anyone who manages it,
// looser only by the lead of its project or an ADMIN.
func (s *Sessions) SetMode(ctx context.Context, p domain.Principal, id, mode string) (domain.Session, error) {
	next, err := domain.ParseSessionMode(mode)
	if err != nil {
		return domain.Session{}, err
	}
	sess, team, err := s.visible(ctx, p, id)
	if err != nil {
		return domain.Session{}, err
	}
	if err := s.authz.CheckSetMode(p, team, sess, next); err != nil {
		return domain.Session{}, err
	}
	if err := s.modes.SetSessionMode(ctx, id, next); err != nil {
		return domain.Session{}, err
	}
	sess.Mode = next
	return sess, nil
}

// Delete removes a session the caller owns or manages. One it may see but
// not manage is forbidden; one it may not see is not found.
func (s *Sessions) Delete(ctx context.Context, p domain.Principal, id string) error {
	if _, err := s.Manageable(ctx, p, id); err != nil {
		return err
	}
	return s.store.DeleteSession(ctx, id)
}
