package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// CreateSession inserts s; an existing id is a domain.ErrConflict.
func (s *Store) CreateSession(ctx context.Context, sess domain.Session) error {
	return s.exec(ctx, "create session "+sess.ID, "session "+sess.ID+" already exists",
		`INSERT INTO sessions (id, owner, project, title, mode, state, created_at, owner_roles) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		sess.ID, sess.Owner, sess.Project, sess.Title, string(sess.Mode), string(sess.State), sess.CreatedAt.UnixNano(), domain.JoinRoles(sess.OwnerRoles))
}

const sessionColumns = `id, owner, project, title, mode, state, created_at, owner_roles`

// GetSession reads one session.
func (s *Store) GetSession(ctx context.Context, id string) (domain.Session, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = $1`, id)
	sess, err := pgx.CollectExactlyOneRow(rows, scanSession)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Session{}, fmt.Errorf("session %s: %w", id, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Session{}, storeErr("read session", err)
	}
	return sess, nil
}

// ListSessions returns a page of sessions newest first. Owner and each of
// Projects are read as separate pages of their own index and merged, so a
// LEAD's page costs (1 + projects) × limit rows at most (up to
// maxMergedSources), never a sort of every session it may see.
func (s *Store) ListSessions(ctx context.Context, f ports.SessionFilter) ([]domain.Session, error) {
	query, args := sessionsQuery(f)
	rows, _ := s.pool.Query(ctx, query, args...)
	out, err := pgx.CollectRows(rows, scanSession)
	if err != nil {
		return nil, storeErr("list sessions", err)
	}
	if out == nil {
		out = []domain.Session{}
	}
	return out, nil
}

// maxMergedSources bounds the pages ListSessions merges, as in SQLite:
// past it, one query matches the owner's and the projects' sessions and
// sorts them, work in proportion to those sessions rather than to the page.
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
		tail, args = keyset([]string{sources[0].col + " = $1"}, []any{sources[0].val}, f.Page, "id")
		query = `SELECT ` + sessionColumns + ` FROM sessions` + tail
	case n > maxMergedSources:
		var or []string
		if f.Owner != "" {
			args = append(args, f.Owner)
			or = append(or, "owner = $1")
		}
		args = append(args, f.Projects)
		or = append(or, "project = ANY($"+strconv.Itoa(len(args))+")")
		tail, args = keyset([]string{"(" + strings.Join(or, " OR ") + ")"}, args, f.Page, "id")
		query = `SELECT ` + sessionColumns + ` FROM sessions` + tail
	default:
		parts := make([]string, len(sources))
		for i, src := range sources {
			args = append(args, src.val)
			tail, args = keyset([]string{src.col + " = $" + strconv.Itoa(len(args))}, args, f.Page, "id")
			parts[i] = `SELECT * FROM (SELECT ` + sessionColumns + ` FROM sessions` + tail + `) AS s` + strconv.Itoa(i)
		}
		tail, args = keyset(nil, args, ports.Page{Limit: f.Limit}, "id")
		query = `SELECT * FROM (` + strings.Join(parts, " UNION ") + `) AS u` + tail
	}
	return query, args
}

// DeleteSession removes one session.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	return s.execOne(ctx, "delete session "+id, "session "+id, `DELETE FROM sessions WHERE id = $1`, id)
}

func scanSession(row pgx.CollectableRow) (domain.Session, error) {
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
