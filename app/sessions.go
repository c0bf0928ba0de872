package app

import (
	"context"
	"fmt"
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
}

// NewSessions wires the use case.
func NewSessions(store ports.SessionStore, settings ports.SettingsStore, authz *domain.Authorizer, clock ports.Clock) *Sessions {
	return &Sessions{store: store, settings: settings, authz: authz, clock: clock}
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
	sess := domain.Session{
		ID:        newID("ses_"),
		Owner:     p.Subject,
		Project:   strings.TrimSpace(in.Project),
		Title:     title,
		Mode:      mode,
		State:     domain.SessionActive,
		CreatedAt: s.clock.Now().UTC(),
	}
	if err := s.store.CreateSession(ctx, sess); err != nil {
		return domain.Session{}, fmt.Errorf("create session: %w", err)
	}
	return sess, nil
}

// List returns the sessions the caller may see, newest first.
func (s *Sessions) List(ctx context.Context, p domain.Principal, limit int) ([]domain.Session, error) {
	f := ports.SessionFilter{Owner: p.Subject, Limit: limit}
	if s.authz.SessionReadScope(p.Roles) == domain.ScopeAll {
		f.Owner = ""
	}
	return s.store.ListSessions(ctx, f)
}

// Get returns one session. A session the caller may not see is reported as
// not found, so its existence does not leak.
func (s *Sessions) Get(ctx context.Context, p domain.Principal, id string) (domain.Session, error) {
	sess, err := s.store.GetSession(ctx, id)
	if err != nil {
		return domain.Session{}, err
	}
	if !s.authz.CanReadSession(p, sess) {
		return domain.Session{}, fmt.Errorf("session %s: %w", id, domain.ErrNotFound)
	}
	return sess, nil
}

// Delete removes a session the caller owns or manages. One it may see but
// not manage is forbidden; one it may not see is not found.
func (s *Sessions) Delete(ctx context.Context, p domain.Principal, id string) error {
	sess, err := s.Get(ctx, p, id)
	if err != nil {
		return err
	}
	if !s.authz.CanManageSession(p, sess) {
		return fmt.Errorf("session %s belongs to another user: %w", id, domain.ErrForbidden)
	}
	return s.store.DeleteSession(ctx, id)
}
