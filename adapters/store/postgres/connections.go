package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

var _ ports.ConnectionStore = (*Store)(nil)

const connectionColumns = `id, subject, server, issuer, client_id, upstream_subject, scopes, status, broken,
	access_token, refresh_token, expires_at, created_at, refreshed_at, version`

func scanConnection(row pgx.Row) (domain.Connection, error) {
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
		`INSERT INTO connections (`+connectionColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
		ON CONFLICT (subject, server) DO UPDATE SET id = excluded.id, issuer = excluded.issuer, client_id = excluded.client_id,
			upstream_subject = excluded.upstream_subject, scopes = excluded.scopes, status = excluded.status, broken = excluded.broken,
			access_token = excluded.access_token, refresh_token = excluded.refresh_token, expires_at = excluded.expires_at,
			created_at = excluded.created_at, refreshed_at = excluded.refreshed_at, version = excluded.version, refreshing_until = 0`,
		c.ID, text(c.Subject), c.Server, text(c.Issuer), text(c.ClientID), text(c.UpstreamSubject), text(strings.Join(c.Scopes, " ")),
		string(c.Status), text(c.Broken), c.AccessToken, c.RefreshToken, nanos(c.ExpiresAt), nanos(c.CreatedAt), nanos(c.RefreshedAt), c.Version)
}

// GetConnection reads the connection of (subject, server).
func (s *Store) GetConnection(ctx context.Context, subject, server string) (domain.Connection, error) {
	c, err := scanConnection(s.pool.QueryRow(ctx, `SELECT `+connectionColumns+` FROM connections WHERE subject = $1 AND server = $2`, text(subject), server))
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Connection{}, fmt.Errorf("connection of %s to %s: %w", subject, server, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Connection{}, storeErr("read connection", err)
	}
	return c, nil
}

// connectionsQuery is the query of ListConnections.
func connectionsQuery(subject string, page ports.Page) (string, []any) {
	var where []string
	var args []any
	if subject != "" {
		where, args = []string{"subject = $1"}, []any{text(subject)}
	}
	tail, args := keyset(where, args, page, "id")
	return `SELECT ` + connectionColumns + ` FROM connections` + tail, args
}

// ListConnections lists a page of subject's connections, or everyone's.
func (s *Store) ListConnections(ctx context.Context, subject string, page ports.Page) ([]domain.Connection, error) {
	query, args := connectionsQuery(subject, page)
	rows, _ := s.pool.Query(ctx, query, args...)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Connection, error) { return scanConnection(row) })
	if err != nil {
		return nil, storeErr("list connections", err)
	}
	return nonNil(out), nil
}

// UpdateConnection replaces the connection if its stored version is
// c.Version-1, ending the refresh lease.
func (s *Store) UpdateConnection(ctx context.Context, c domain.Connection) error {
	return s.change(ctx, domain.ConnectionChange("update", c.Subject, c.Server), func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE connections SET upstream_subject = $1, scopes = $2, status = $3, broken = $4, access_token = $5,
			refresh_token = $6, expires_at = $7, refreshed_at = $8, version = $9, refreshing_until = 0
			WHERE subject = $10 AND server = $11 AND version = $12`,
			text(c.UpstreamSubject), text(strings.Join(c.Scopes, " ")), string(c.Status), text(c.Broken), c.AccessToken, c.RefreshToken,
			nanos(c.ExpiresAt), nanos(c.RefreshedAt), c.Version, text(c.Subject), c.Server, c.Version-1)
		if err != nil {
			return storeErr("update connection", err)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM connections WHERE subject = $1 AND server = $2`, text(c.Subject), c.Server).Scan(&n); err != nil {
			return storeErr("read connection", err)
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
	err := s.change(ctx, domain.ConnectionChange("remove", subject, server), func(ctx context.Context, tx pgx.Tx) error {
		var err error
		c, err = scanConnection(tx.QueryRow(ctx, `DELETE FROM connections WHERE subject = $1 AND server = $2 RETURNING `+connectionColumns, text(subject), server))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("connection of %s to %s: %w", subject, server, domain.ErrNotFound)
		}
		if err != nil {
			return storeErr("remove connection", err)
		}
		return nil
	})
	return c, err
}

// LeaseRefresh takes the refresh of a connection when nobody holds it: one
// conditional update, which PostgreSQL runs one at a time per row, so of
// instances asking at once one gets it.
func (s *Store) LeaseRefresh(ctx context.Context, subject, server string, version int64, now, until time.Time) (bool, error) {
	var taken bool
	err := s.change(ctx, domain.ConnectionChange("take the refresh of", subject, server), func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE connections SET refreshing_until = $1 WHERE subject = $2 AND server = $3 AND version = $4 AND refreshing_until <= $5`,
			nanos(until), text(subject), server, version, nanos(now))
		if err != nil {
			return storeErr("take the refresh of a connection", err)
		}
		taken = tag.RowsAffected() == 1
		return nil
	})
	return taken, err
}

// PutConnectRequest stores a connect request and drops those expired at
// now (abandoned flows).
func (s *Store) PutConnectRequest(ctx context.Context, r ports.ConnectRequest, now time.Time) error {
	return s.change(ctx, domain.ConnectionChange("begin", r.Subject, r.Server), func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM connect_requests WHERE expires_at <= $1`, nanos(now)); err != nil {
			return storeErr("remove expired connect requests", err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO connect_requests (state_hash, subject, server, issuer, client_id, code_verifier, resource, return_to, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			r.StateHash, text(r.Subject), r.Server, text(r.Issuer), text(r.ClientID), r.CodeVerifier, text(r.Resource), text(r.ReturnTo), nanos(r.ExpiresAt))
		if err != nil {
			return conflict(err, "connect request already exists", "store connect request")
		}
		return nil
	})
}

// TakeConnectRequest deletes and returns a connect request in one
// statement, so that two callbacks with one state (on any instances)
// cannot both get it.
func (s *Store) TakeConnectRequest(ctx context.Context, stateHash string, now time.Time) (ports.ConnectRequest, error) {
	r := ports.ConnectRequest{StateHash: stateHash}
	var exp int64
	err := s.change(ctx, "take connect request "+stateHash[:min(len(stateHash), 12)], func(ctx context.Context, tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `DELETE FROM connect_requests WHERE state_hash = $1
			RETURNING subject, server, issuer, client_id, code_verifier, resource, return_to, expires_at`, stateHash).
			Scan(&r.Subject, &r.Server, &r.Issuer, &r.ClientID, &r.CodeVerifier, &r.Resource, &r.ReturnTo, &exp)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("connect request: %w", domain.ErrNotFound)
		}
		if err != nil {
			return storeErr("take connect request", err)
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
