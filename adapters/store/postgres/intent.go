package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

var _ ports.IntentRecovery = (*Store)(nil)

// change runs fn and writes the request's audit intent, naming the change
// as what, in one transaction: the change and the note that it awaits its
// audit record commit together or not at all. Concurrent changes share a
// transaction and its commit (txbatch), each in a savepoint of its own, so
// a change that fails fails alone. Without an intent in ctx nothing is
// changed (fail closed).
func (s *Store) change(ctx context.Context, what string, fn func(ctx context.Context, tx pgx.Tx) error) error {
	in := ports.AuditIntentFrom(ctx)
	if in == nil {
		return fmt.Errorf("postgres: %s: %w", what, ports.ErrNoAuditIntent)
	}
	return txErr(what, s.batch.Do(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := fn(ctx, tx); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO audit_intents (key, request_id, at, subject, roles, auth_method, client, method, path, change)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, in.EnsureKey(), text(in.RequestID), time.Now().UnixMicro(), text(in.Subject),
			text(domain.JoinRoles(in.Roles)), string(in.AuthMethod), text(in.Client), text(in.Method), text(in.Path), text(what))
		if err != nil {
			return storeErr("record the intent of "+what, err)
		}
		return nil
	}))
}

// writers is how many batches commit at once, each on a connection of its
// own while it commits: half the pool (pool_max_conns, 4 by default on
// two cores), so that reads always find a connection, and at most four.
func writers(maxConns int32) int {
	return int(min(max(maxConns/2, 1), 4))
}

// batchDB is the connection pool as txbatch sees it.
type batchDB struct{ p *pgxpool.Pool }

func (p batchDB) Begin(ctx context.Context) (pgx.Tx, error) { return p.p.Begin(ctx) }

func (p batchDB) Exec(ctx context.Context, tx pgx.Tx, stmt string) error {
	_, err := tx.Exec(ctx, stmt)
	return err
}

func (p batchDB) Commit(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) }

func (p batchDB) Rollback(tx pgx.Tx) { _ = tx.Rollback(context.Background()) }

// text makes caller-chosen text storable: PostgreSQL refuses NUL and bytes
// that are not UTF-8, and a change must not fail over how its intent is
// spelt. The intent is only ever read back to reconstruct a lost record.
func text(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
}

// execOne makes the change what (with its audit intent) by a statement
// that must change one row; none is reported as domain.ErrNotFound naming
// missing, and changes nothing.
func (s *Store) execOne(ctx context.Context, what, missing, query string, args ...any) error {
	return s.change(ctx, what, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, query, args...)
		if err != nil {
			return storeErr(what, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%s: %w", missing, domain.ErrNotFound)
		}
		return nil
	})
}

// exec makes the change what (with its audit intent) by one statement; a
// duplicate key is domain.ErrConflict with the message dup.
func (s *Store) exec(ctx context.Context, what, dup, query string, args ...any) error {
	return s.change(ctx, what, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, query, args...); err != nil {
			return conflict(err, dup, what)
		}
		return nil
	})
}

// settleIntents deletes, inside tx, the intents of the requests whose
// audit records tx commits: once the record is durable the change is
// accounted for.
func settleIntents(ctx context.Context, tx pgx.Tx, records []domain.AuditRecord) error {
	var keys []string
	for i := range records {
		if k := records[i].IntentKey; k != "" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil // a batch of requests that changed nothing
	}
	if _, err := tx.Exec(ctx, `DELETE FROM audit_intents WHERE key = ANY($1)`, keys); err != nil {
		return fmt.Errorf("settle audit intents: %w", err)
	}
	return nil
}

// RecoverIntents claims the intents written before cutoff and appends one
// recovered record per request, all in one transaction under the chain-head
// lock, so that two instances recovering at once claim each intent once.
// An intent left means its request has no record: the transaction storing
// a record settles its request's intents.
func (s *Store) RecoverIntents(ctx context.Context, cutoff time.Time) ([]domain.AuditRecord, error) {
	var records []domain.AuditRecord
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The head first, as every append takes it: an append settling
		// intents and a recovery claiming them then never wait on each
		// other in opposite orders.
		if _, err := tx.Exec(ctx, `SELECT seq FROM audit_head WHERE id = 1 FOR UPDATE`); err != nil {
			return fmt.Errorf("lock chain head: %w", err)
		}
		changes, err := claimIntents(ctx, tx, cutoff)
		if err != nil || len(changes) == 0 {
			return err
		}
		now := time.Now()
		for _, group := range domain.GroupChanges(changes) {
			records = append(records, domain.RecoveredRecord(group, now))
		}
		return appendAudit(ctx, tx, records)
	})
	if err != nil {
		return nil, storeErr("recover audit intents", err)
	}
	return records, nil
}

// claimIntents deletes and returns the intents written before cutoff,
// oldest first.
func claimIntents(ctx context.Context, tx pgx.Tx, cutoff time.Time) ([]domain.PendingChange, error) {
	rows, _ := tx.Query(ctx, `WITH claimed AS (DELETE FROM audit_intents WHERE at < $1
			RETURNING id, key, request_id, at, subject, roles, auth_method, client, method, path, change)
		SELECT key, request_id, at, subject, roles, auth_method, client, method, path, change FROM claimed ORDER BY id`, cutoff.UnixMicro())
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.PendingChange, error) {
		var (
			c             domain.PendingChange
			at            int64
			roles, method string
		)
		in := &c.Intent
		err := row.Scan(&in.Key, &in.RequestID, &at, &in.Subject, &roles, &method, &in.Client, &in.Method, &in.Path, &c.Change)
		in.Roles, in.AuthMethod, c.At = domain.SplitRoles(roles), domain.AuthMethod(method), time.UnixMicro(at).UTC()
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim audit intents: %w", err)
	}
	return out, nil
}

// PendingIntents counts the intents not yet settled by a record.
func (s *Store) PendingIntents(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM audit_intents`).Scan(&n); err != nil {
		return 0, storeErr("count audit intents", err)
	}
	return n, nil
}
