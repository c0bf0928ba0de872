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
	return s.exec(ctx, "create session "+sess.ID, "session "+sess.ID+" already exists",
		`INSERT INTO sessions (id, owner, project, title, mode, state, created_at, owner_roles) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		sess.ID, sess.Owner, sess.Project, sess.Title, string(sess.Mode), string(sess.State), sess.CreatedAt.UnixNano(), domain.JoinRoles(sess.OwnerRoles))
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

// ListSessions returns sessions newest first.
func (s *Store) ListSessions(ctx context.Context, f ports.SessionFilter) ([]domain.Session, error) {
	var (
		where []string
		args  []any
	)
	if f.Owner != "" {
		where, args = append(where, "owner = ?"), append(args, f.Owner)
	}
	if len(f.Projects) > 0 {
		where = append(where, "project IN (?"+strings.Repeat(",?", len(f.Projects)-1)+")")
		for _, p := range f.Projects {
			args = append(args, p)
		}
	}
	query := `SELECT ` + sessionColumns + ` FROM sessions`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " OR ")
	}
	rows, err := s.queryRows(ctx, query+` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limitArg(f.Limit))...)
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

// DeleteSession removes one session.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	return s.execOne(ctx, "delete session "+id, "session "+id, `DELETE FROM sessions WHERE id = ?`, id)
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
