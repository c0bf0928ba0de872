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

var _ ports.ConnectionStore = (*Store)(nil)

const connectionColumns = `id, subject, server, issuer, client_id, upstream_subject, scopes, status, broken,
	access_token, refresh_token, expires_at, created_at, refreshed_at, version`

func scanConnection(row scanner) (domain.Connection, error) {
	var (
		c                           domain.Connection
		scopes, status              string
		expires, created, refreshed int64
	)
	if err := row.Scan(&c.ID, &c.Subject, &c.Server, &c.Issuer, &c.ClientID, &c.UpstreamSubject, &scopes, &status, &c.Broken,
		&c.AccessToken, &c.RefreshToken, &expires, &created, &refreshed, &c.Version); err != nil {
		return domain.Connection{}, err
	}
	c.Scopes, c.Status = strings.Fields(scopes), domain.ConnectionStatus(status)
	c.ExpiresAt, c.CreatedAt, c.RefreshedAt = fromNanos(expires), fromNanos(created), fromNanos(refreshed)
	return c, nil
}

// PutConnection creates or replaces the connection of (subject, server).
func (s *Store) PutConnection(ctx context.Context, c domain.Connection) error {
	return s.exec(ctx, domain.ConnectionChange("make", c.Subject, c.Server), "connection "+c.ID+" already exists",
		`INSERT INTO connections (`+connectionColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (subject, server) DO UPDATE SET id = excluded.id, issuer = excluded.issuer, client_id = excluded.client_id,
			upstream_subject = excluded.upstream_subject, scopes = excluded.scopes, status = excluded.status, broken = excluded.broken,
			access_token = excluded.access_token, refresh_token = excluded.refresh_token, expires_at = excluded.expires_at,
			created_at = excluded.created_at, refreshed_at = excluded.refreshed_at, version = excluded.version, refreshing_until = 0`,
		c.ID, c.Subject, c.Server, c.Issuer, c.ClientID, c.UpstreamSubject, strings.Join(c.Scopes, " "), string(c.Status), c.Broken,
		c.AccessToken, c.RefreshToken, nanos(c.ExpiresAt), nanos(c.CreatedAt), nanos(c.RefreshedAt), c.Version)
}

// GetConnection reads the connection of (subject, server).
func (s *Store) GetConnection(ctx context.Context, subject, server string) (domain.Connection, error) {
	c, err := scanConnection(s.queryRow(ctx, `SELECT `+connectionColumns+` FROM connections WHERE subject = ? AND server = ?`, subject, server))
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Connection{}, fmt.Errorf("connection of %s to %s: %w", subject, server, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Connection{}, fmt.Errorf("sqlite: read connection: %w", err)
	}
	return c, nil
}

// connectionsQuery is the query of ListConnections.
func connectionsQuery(subject string, page ports.Page) (string, []any) {
	var where []string
	var args []any
	if subject != "" {
		where, args = []string{"subject = ?"}, []any{subject}
	}
	tail, args := keyset(where, args, page, "id")
	return `SELECT ` + connectionColumns + ` FROM connections` + tail, args
}

// ListConnections lists a page of subject's connections, or everyone's.
func (s *Store) ListConnections(ctx context.Context, subject string, page ports.Page) ([]domain.Connection, error) {
	query, args := connectionsQuery(subject, page)
	rows, err := s.queryRows(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list connections: %w", err)
	}
	defer rows.Close()
	out := []domain.Connection{}
	for rows.Next() {
		c, err := scanConnection(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: scan connection: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// UpdateConnection replaces the connection if its stored version is
// c.Version-1, ending the refresh lease.
func (s *Store) UpdateConnection(ctx context.Context, c domain.Connection) error {
	return s.change(ctx, domain.ConnectionChange("update", c.Subject, c.Server), func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE connections SET upstream_subject = ?, scopes = ?, status = ?, broken = ?, access_token = ?,
			refresh_token = ?, expires_at = ?, refreshed_at = ?, version = ?, refreshing_until = 0
			WHERE subject = ? AND server = ? AND version = ?`,
			c.UpstreamSubject, strings.Join(c.Scopes, " "), string(c.Status), c.Broken, c.AccessToken, c.RefreshToken,
			nanos(c.ExpiresAt), nanos(c.RefreshedAt), c.Version, c.Subject, c.Server, c.Version-1)
		if err != nil {
			return fmt.Errorf("sqlite: update connection: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return nil
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM connections WHERE subject = ? AND server = ?`, c.Subject, c.Server).Scan(&n); err != nil {
			return fmt.Errorf("sqlite: read connection: %w", err)
		}
		if n == 0 {
			return fmt.Errorf("connection of %s to %s: %w", c.Subject, c.Server, domain.ErrNotFound)
		}
		return fmt.Errorf("connection of %s to %s was updated by another request: %w", c.Subject, c.Server, domain.ErrConflict)
	})
}

// DeleteConnection removes the connection and returns it.
func (s *Store) DeleteConnection(ctx context.Context, subject, server string) (domain.Connection, error) {
	var c domain.Connection
	err := s.change(ctx, domain.ConnectionChange("remove", subject, server), func(ctx context.Context, tx *sql.Tx) error {
		var err error
		c, err = scanConnection(tx.QueryRowContext(ctx, `DELETE FROM connections WHERE subject = ? AND server = ? RETURNING `+connectionColumns, subject, server))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("connection of %s to %s: %w", subject, server, domain.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("sqlite: remove connection: %w", err)
		}
		return nil
	})
	return c, err
}

// LeaseRefresh takes the refresh of a connection when nobody holds it.
func (s *Store) LeaseRefresh(ctx context.Context, subject, server string, version int64, now, until time.Time) (bool, error) {
	var taken bool
	err := s.change(ctx, domain.ConnectionChange("take the refresh of", subject, server), func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE connections SET refreshing_until = ? WHERE subject = ? AND server = ? AND version = ? AND refreshing_until <= ?`,
			nanos(until), subject, server, version, nanos(now))
		if err != nil {
			return fmt.Errorf("sqlite: take the refresh of a connection: %w", err)
		}
		n, _ := res.RowsAffected()
		taken = n == 1
		return nil
	})
	return taken, err
}

// PutConnectRequest stores a connect request and drops those expired at
// now (abandoned flows).
func (s *Store) PutConnectRequest(ctx context.Context, r ports.ConnectRequest, now time.Time) error {
	return s.change(ctx, domain.ConnectionChange("begin", r.Subject, r.Server), func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM connect_requests WHERE expires_at <= ?`, nanos(now)); err != nil {
			return fmt.Errorf("sqlite: remove expired connect requests: %w", err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO connect_requests (state_hash, subject, server, issuer, client_id, code_verifier, resource, return_to, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.StateHash, r.Subject, r.Server, r.Issuer, r.ClientID, r.CodeVerifier, r.Resource, r.ReturnTo, nanos(r.ExpiresAt))
		if isUnique(err) {
			return fmt.Errorf("connect request already exists: %w", domain.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("sqlite: store connect request: %w", err)
		}
		return nil
	})
}

// TakeConnectRequest deletes and returns a connect request in one
// statement, so that two callbacks with one state cannot both get it.
func (s *Store) TakeConnectRequest(ctx context.Context, stateHash string, now time.Time) (ports.ConnectRequest, error) {
	r := ports.ConnectRequest{StateHash: stateHash}
	var exp int64
	err := s.change(ctx, "take connect request "+stateHash[:min(len(stateHash), 12)], func(ctx context.Context, tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `DELETE FROM connect_requests WHERE state_hash = ?
			RETURNING subject, server, issuer, client_id, code_verifier, resource, return_to, expires_at`, stateHash).
			Scan(&r.Subject, &r.Server, &r.Issuer, &r.ClientID, &r.CodeVerifier, &r.Resource, &r.ReturnTo, &exp)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("connect request: %w", domain.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("sqlite: take connect request: %w", err)
		}
		return nil
	})
	if err != nil {
		return ports.ConnectRequest{}, err
	}
	r.ExpiresAt = fromNanos(exp)
	if !now.Before(r.ExpiresAt) {
		return ports.ConnectRequest{}, fmt.Errorf("connect request expired: %w", domain.ErrNotFound)
	}
	return r, nil
}
