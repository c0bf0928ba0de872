package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// CreateSession inserts s.
func (s *Store) CreateSession(ctx context.Context, sess domain.Session) error {
	return s.announced(ports.SessionChangeKey(sess.ID), s.exec(ctx, "create session "+sess.ID, "session "+sess.ID+" already exists",
		`INSERT INTO sessions (id, owner, project, title, mode, state, created_at, owner_roles) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		sess.ID, sess.Owner, sess.Project, sess.Title, string(sess.Mode), string(sess.State), sess.CreatedAt.UnixNano(), domain.JoinRoles(sess.OwnerRoles)))
}

const sessionColumns = `id, owner, project, title, mode, state, created_at, owner_roles`

// GetSession reads one session.
func (s *Store) GetSession(ctx context.Context, id string) (domain.Session, error) {
	row := s.queryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ?`, id)
	sess, err := scanSession(row)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Session{}, fmt.Errorf("session %s: %w", id, domain.ErrNotFound)
	}
	return sess, err
}

// ListSessions returns a page of sessions newest first. Owner and each of
// Projects are read as separate pages of their own index and merged, so a
// LEAD's page costs (1 + projects) × limit rows at most (up to
// maxMergedSources), never a sort of every session it may see.
func (s *Store) ListSessions(ctx context.Context, f ports.SessionFilter) ([]domain.Session, error) {
	query, args := sessionsQuery(f)
	rows, err := s.queryRows(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list sessions: %w", err)
	}
	defer rows.Close()
	out := []domain.Session{}
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sess)
	}
	return out, rows.Err()
}

// maxMergedSources bounds the pages ListSessions merges (SQLite caps a
// compound SELECT at 500 terms): past it, one query matches the owner's and
// the projects' sessions and sorts them, work in proportion to those
// sessions rather than to the page.
const maxMergedSources = 64

// sessionsQuery is the query of ListSessions.
func sessionsQuery(f ports.SessionFilter) (string, []any) {
	type source struct{ col, val string }
	var sources []source
	if f.Owner != "" {
		sources = append(sources, source{"owner", f.Owner})
	}
	for _, p := range f.Projects {
		sources = append(sources, source{"project", p})
	}
	var (
		query, tail string
		args        []any
	)
	switch n := len(sources); {
	case n == 0:
		tail, args = keyset(nil, nil, f.Page, "id")
		query = `SELECT ` + sessionColumns + ` FROM sessions` + tail
	case n == 1:
		tail, args = keyset([]string{sources[0].col + " = ?"}, []any{sources[0].val}, f.Page, "id")
		query = `SELECT ` + sessionColumns + ` FROM sessions` + tail
	case n > maxMergedSources:
		var or []string
		if f.Owner != "" {
			or, args = append(or, "owner = ?"), append(args, f.Owner)
		}
		or = append(or, "project IN (?"+strings.Repeat(",?", len(f.Projects)-1)+")")
		for _, p := range f.Projects {
			args = append(args, p)
		}
		tail, args = keyset([]string{"(" + strings.Join(or, " OR ") + ")"}, args, f.Page, "id")
		query = `SELECT ` + sessionColumns + ` FROM sessions` + tail
	default:
		parts := make([]string, len(sources))
		for i, src := range sources {
			tail, args = keyset([]string{src.col + " = ?"}, append(args, src.val), f.Page, "id")
			parts[i] = `SELECT * FROM (SELECT ` + sessionColumns + ` FROM sessions` + tail + `)`
		}
		tail, args = keyset(nil, args, ports.Page{Limit: f.Limit}, "id")
		query = `SELECT * FROM (` + strings.Join(parts, " UNION ") + `)` + tail
	}
	return query, args
}

// DeleteSession removes one session.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	return s.announced(ports.SessionChangeKey(id), s.execOne(ctx, "delete session "+id, "session "+id, `DELETE FROM sessions WHERE id = ?`, id))
}

type scanner interface{ Scan(dest ...any) error }

func scanSession(row scanner) (domain.Session, error) {
	var (
		sess        domain.Session
		mode, state string
		created     int64
		roles       string
	)
	if err := row.Scan(&sess.ID, &sess.Owner, &sess.Project, &sess.Title, &mode, &state, &created, &roles); err != nil {
		return domain.Session{}, err
	}
	sess.Mode, sess.State = domain.SessionMode(mode), domain.SessionState(state)
	sess.OwnerRoles = domain.SplitRoles(roles)
	sess.CreatedAt = time.Unix(0, created).UTC()
	return sess, nil
}
