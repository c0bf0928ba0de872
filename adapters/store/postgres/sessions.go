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

// ListSessions returns sessions newest first.
func (s *Store) ListSessions(ctx context.Context, f ports.SessionFilter) ([]domain.Session, error) {
	var limit *int // NULL: no limit
	if f.Limit > 0 {
		limit = &f.Limit
	}
	// Owner and Projects widen each other: a LEAD sees its own sessions and
	// those of the projects it leads.
	var (
		where []string
		args  []any
	)
	if f.Owner != "" {
		args = append(args, f.Owner)
		where = append(where, "owner = $"+strconv.Itoa(len(args)))
	}
	if len(f.Projects) > 0 {
		args = append(args, f.Projects)
		where = append(where, "project = ANY($"+strconv.Itoa(len(args))+")")
	}
	query := `SELECT ` + sessionColumns + ` FROM sessions`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " OR ")
	}
	args = append(args, limit)
	rows, _ := s.pool.Query(ctx, query+` ORDER BY created_at DESC, id DESC LIMIT $`+strconv.Itoa(len(args)), args...)
	out, err := pgx.CollectRows(rows, scanSession)
	if err != nil {
		return nil, storeErr("list sessions", err)
	}
	if out == nil {
		out = []domain.Session{}
	}
	return out, nil
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
