package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

var _ ports.APIKeyStore = (*Store)(nil)

const apiKeyColumns = `id, name, owner, hash, permissions, projects, tools, created_by, created_at, expires_at, revoked_at, last_used`

// CreateAPIKey counts the owner's live keys and inserts k in one write
// transaction: SQLite has one writer, so no other creation slips between.
func (s *Store) CreateAPIKey(ctx context.Context, k domain.APIKey, maxPerOwner int, now time.Time) error {
	perms, projects, tools, err := keyLists(k)
	if err != nil {
		return err
	}
	return s.change(ctx, domain.KeyChange("create", k.ID, k.Owner), func(ctx context.Context, tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM api_keys WHERE owner = ? AND revoked_at = 0 AND expires_at > ?`,
			k.Owner, nanos(now)).Scan(&n); err != nil {
			return fmt.Errorf("sqlite: count api keys: %w", err)
		}
		if n >= maxPerOwner {
			return domain.RefuseToken(domain.ReasonKeyLimit, domain.ErrConflict, "%s already holds %d live keys, the most allowed (auth.apiKeys.maxPerOwner); revoke one first", k.Owner, n)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO api_keys (`+apiKeyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			k.ID, k.Name, k.Owner, k.Hash, perms, projects, tools, k.CreatedBy, nanos(k.CreatedAt), nanos(k.ExpiresAt), nanos(k.RevokedAt), nanos(k.LastUsed))
		if isUnique(err) {
			return fmt.Errorf("key id %s is taken: %w", k.ID, domain.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("sqlite: insert api key: %w", err)
		}
		return nil
	})
}

func keyLists(k domain.APIKey) (perms, projects, tools string, err error) {
	var b [3][]byte
	for i, v := range []any{k.Permissions, k.Projects, k.Tools} {
		if b[i], err = json.Marshal(v); err != nil {
			return "", "", "", fmt.Errorf("sqlite: encode api key lists: %w", err)
		}
	}
	return string(b[0]), string(b[1]), string(b[2]), nil
}

// GetAPIKey reads one key.
func (s *Store) GetAPIKey(ctx context.Context, id string) (domain.APIKey, error) {
	list, err := s.queryAPIKeys(ctx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE id = ?`, id)
	if err != nil {
		return domain.APIKey{}, err
	}
	if len(list) == 0 {
		return domain.APIKey{}, fmt.Errorf("key %s: %w", id, domain.ErrNotFound)
	}
	return list[0], nil
}

// ListAPIKeys lists a page of owner's keys, or of all, newest first.
func (s *Store) ListAPIKeys(ctx context.Context, owner string, page ports.Page) ([]domain.APIKey, error) {
	query, args := apiKeysQuery(owner, page)
	return s.queryAPIKeys(ctx, query, args...)
}

// apiKeysQuery is the query of ListAPIKeys.
func apiKeysQuery(owner string, page ports.Page) (string, []any) {
	var (
		where []string
		args  []any
	)
	if owner != "" {
		where, args = append(where, "owner = ?"), append(args, owner)
	}
	tail, args := keyset(where, args, page, "id")
	return `SELECT ` + apiKeyColumns + ` FROM api_keys` + tail, args
}

func (s *Store) queryAPIKeys(ctx context.Context, query string, args ...any) ([]domain.APIKey, error) {
	rows, err := s.queryRows(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: query api keys: %w", err)
	}
	defer rows.Close()
	var out []domain.APIKey
	for rows.Next() {
		var (
			k                                     domain.APIKey
			perms, projects, tools                string
			created, expires, revoked, lastUsedAt int64
		)
		if err := rows.Scan(&k.ID, &k.Name, &k.Owner, &k.Hash, &perms, &projects, &tools, &k.CreatedBy, &created, &expires, &revoked, &lastUsedAt); err != nil {
			return nil, fmt.Errorf("sqlite: read api key: %w", err)
		}
		if err := errors.Join(json.Unmarshal([]byte(perms), &k.Permissions), json.Unmarshal([]byte(projects), &k.Projects),
			json.Unmarshal([]byte(tools), &k.Tools)); err != nil {
			return nil, fmt.Errorf("sqlite: decode api key %s: %w", k.ID, err)
		}
		k.CreatedAt, k.ExpiresAt, k.RevokedAt, k.LastUsed = fromNanos(created), fromNanos(expires), fromNanos(revoked), fromNanos(lastUsedAt)
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: query api keys: %w", err)
	}
	return out, nil
}

// RevokeAPIKey marks a key revoked and tells the watcher.
func (s *Store) RevokeAPIKey(ctx context.Context, id string, at time.Time) error {
	err := s.change(ctx, domain.KeyChange("revoke", id, ""), func(ctx context.Context, tx *sql.Tx) error {
		var revoked int64
		err := tx.QueryRowContext(ctx, `SELECT revoked_at FROM api_keys WHERE id = ?`, id).Scan(&revoked)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("key %s: %w", id, domain.ErrNotFound)
		}
		if err != nil || revoked != 0 {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE id = ?`, nanos(at), id); err != nil {
			return fmt.Errorf("sqlite: revoke api key: %w", err)
		}
		return nil
	})
	if err == nil {
		s.announce(ports.KeyChangeKey(id))
	}
	return err
}

// TouchAPIKey records a use.
func (s *Store) TouchAPIKey(ctx context.Context, id string, at time.Time) error {
	return s.execOne(ctx, domain.KeyChange("mark used", id, ""), "key "+id,
		`UPDATE api_keys SET last_used = max(last_used, ?) WHERE id = ?`, nanos(at), id)
}

const keyOwnerColumns = `subject, roles, service, disabled, updated_at, name`

// GetKeyOwner reads one owner.
func (s *Store) GetKeyOwner(ctx context.Context, subject string) (domain.KeyOwner, error) {
	list, err := s.queryKeyOwners(ctx, `SELECT `+keyOwnerColumns+` FROM api_key_owners WHERE subject = ?`, subject)
	if err != nil {
		return domain.KeyOwner{}, err
	}
	if len(list) == 0 {
		return domain.KeyOwner{}, fmt.Errorf("key owner %s: %w", subject, domain.ErrNotFound)
	}
	return list[0], nil
}

// ListKeyOwners lists a page of the service accounts or the people.
func (s *Store) ListKeyOwners(ctx context.Context, service bool, page ports.Page) ([]domain.KeyOwner, error) {
	query, args := keyOwnersQuery(service, page)
	return s.queryKeyOwners(ctx, query, args...)
}

// keyOwnersQuery is the query of ListKeyOwners: a range of the index on
// (service, subject).
func keyOwnersQuery(service bool, page ports.Page) (string, []any) {
	return `SELECT ` + keyOwnerColumns + ` FROM api_key_owners WHERE service = ? AND subject > ? ORDER BY subject LIMIT ?`,
		[]any{boolInt(service), page.After.Key, limitArg(page.Limit)}
}

func (s *Store) queryKeyOwners(ctx context.Context, query string, args ...any) ([]domain.KeyOwner, error) {
	rows, err := s.queryRows(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: query key owners: %w", err)
	}
	defer rows.Close()
	var out []domain.KeyOwner
	for rows.Next() {
		var (
			o                 domain.KeyOwner
			roles             string
			service, disabled int
			updated           int64
		)
		if err := rows.Scan(&o.Subject, &roles, &service, &disabled, &updated, &o.Name); err != nil {
			return nil, fmt.Errorf("sqlite: read key owner: %w", err)
		}
		o.Roles, o.Service, o.Disabled, o.UpdatedAt = domain.SplitRoles(roles), service != 0, disabled != 0, fromNanos(updated)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: query key owners: %w", err)
	}
	return out, nil
}

// PutKeyOwner writes an owner and tells the watcher.
func (s *Store) PutKeyOwner(ctx context.Context, o domain.KeyOwner) error {
	err := s.exec(ctx, domain.KeyOwnerChange(o), "", `INSERT INTO api_key_owners (`+keyOwnerColumns+`) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (subject) DO UPDATE SET roles = excluded.roles, service = excluded.service, disabled = excluded.disabled, updated_at = excluded.updated_at, name = excluded.name`,
		o.Subject, domain.JoinRoles(o.Roles), boolInt(o.Service), boolInt(o.Disabled), nanos(o.UpdatedAt), o.Name)
	if err == nil {
		s.announce(ports.OwnerChangeKey(o.Subject))
	}
	return err
}

// CreateKeyOwner creates an owner whose subject is free.
func (s *Store) CreateKeyOwner(ctx context.Context, o domain.KeyOwner) error {
	err := s.exec(ctx, domain.KeyOwnerChange(o), "key owner "+o.Subject+" exists", `INSERT INTO api_key_owners (`+keyOwnerColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
		o.Subject, domain.JoinRoles(o.Roles), boolInt(o.Service), boolInt(o.Disabled), nanos(o.UpdatedAt), o.Name)
	if err == nil {
		s.announce(ports.OwnerChangeKey(o.Subject))
	}
	return err
}
