package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

var _ ports.IntentOutbox = (*Store)(nil)

// change runs fn and writes the request's audit intent, naming the change
// as what, in one transaction: the change and the note that it awaits its
// audit record commit together or not at all. Concurrent changes share the
// transaction and its sync (txbatch), each in a savepoint of its own, so a
// change that fails fails alone. Without an intent in ctx nothing is
// changed (fail closed).
func (s *Store) change(ctx context.Context, what string, fn func(ctx context.Context, tx *sql.Tx) error) error {
	in := ports.AuditIntentFrom(ctx)
	if in == nil {
		return fmt.Errorf("sqlite: %s: %w", what, ports.ErrNoAuditIntent)
	}
	return unavailable(s.batch.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := fn(ctx, tx); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO audit_intents (key, request_id, at, subject, roles, auth_method, client, method, path, change)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, in.EnsureKey(), in.RequestID, time.Now().UnixMicro(), in.Subject, domain.JoinRoles(in.Roles),
			string(in.AuthMethod), in.Client, in.Method, in.Path, what)
		if err != nil {
			return fmt.Errorf("sqlite: record the intent of %s: %w", what, err)
		}
		return nil
	}))
}

// writer is the write connection as txbatch sees it.
type writer struct{ db *sql.DB }

func (w writer) Begin(ctx context.Context) (*sql.Tx, error) { return w.db.BeginTx(ctx, nil) }

func (w writer) Exec(ctx context.Context, tx *sql.Tx, stmt string) error {
	_, err := tx.ExecContext(ctx, stmt)
	return err
}

func (w writer) Commit(_ context.Context, tx *sql.Tx) error { return tx.Commit() }

func (w writer) Rollback(tx *sql.Tx) { _ = tx.Rollback() }

// settleIntents deletes, inside tx, the intents of the requests whose
// audit records tx stores: once the record is durable the change is
// accounted for. Whatever stores audit records calls it in its transaction;
// a batch of requests that changed nothing costs no statement.
func settleIntents(ctx context.Context, tx *sql.Tx, records []domain.AuditRecord) error {
	var keys []any
	for i := range records {
		if k := records[i].IntentKey; k != "" {
			keys = append(keys, k)
		}
	}
	return settleKeys(ctx, tx, keys)
}

func settleKeys(ctx context.Context, tx *sql.Tx, keys []any) error {
	for start := 0; start < len(keys); start += auditChunk {
		chunk := keys[start:min(start+auditChunk, len(keys))]
		if _, err := tx.ExecContext(ctx, `DELETE FROM audit_intents WHERE key IN (?`+strings.Repeat(",?", len(chunk)-1)+`)`, chunk...); err != nil {
			return fmt.Errorf("sqlite: settle audit intents: %w", err)
		}
	}
	return nil
}

// SettleIntents deletes the intents filed under keys, of requests whose
// records are known to be in the chain.
func (s *Store) SettleIntents(ctx context.Context, keys []string) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin settling audit intents: %w", err)
	}
	defer tx.Rollback()
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	if err := settleKeys(ctx, tx, args); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit settled audit intents: %w", err)
	}
	return nil
}

// PendingChanges returns the intents written before cutoff, oldest first.
func (s *Store) PendingChanges(ctx context.Context, cutoff time.Time) ([]domain.PendingChange, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT key, request_id, at, subject, roles, auth_method, client, method, path, change
		FROM audit_intents WHERE at < ? ORDER BY id`, cutoff.UnixMicro())
	if err != nil {
		return nil, fmt.Errorf("sqlite: read audit intents: %w", err)
	}
	defer rows.Close()
	var out []domain.PendingChange
	for rows.Next() {
		var (
			c             domain.PendingChange
			at            int64
			roles, method string
		)
		in := &c.Intent
		if err := rows.Scan(&in.Key, &in.RequestID, &at, &in.Subject, &roles, &method, &in.Client, &in.Method, &in.Path, &c.Change); err != nil {
			return nil, fmt.Errorf("sqlite: scan audit intent: %w", err)
		}
		in.Roles, in.AuthMethod, c.At = domain.SplitRoles(roles), domain.AuthMethod(method), time.UnixMicro(at).UTC()
		out = append(out, c)
	}
	return out, rows.Err()
}

// PendingIntents counts the intents not yet settled by a record.
func (s *Store) PendingIntents(ctx context.Context) (int, error) {
	var n int
	if err := s.read.QueryRowContext(ctx, `SELECT count(*) FROM audit_intents`).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: count audit intents: %w", err)
	}
	return n, nil
}
