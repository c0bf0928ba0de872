package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentauth/agentauth/domain"
)

const checkpointColumns = `seq, hash, time, prev, key_id, signature`

// AppendCheckpoint runs next and stores its checkpoint in one transaction
// that holds a lock on the checkpoint table which only another
// AppendCheckpoint waits for: instances extend one checkpoint chain.
func (s *Store) AppendCheckpoint(ctx context.Context, next func(*domain.AuditCheckpoint) (domain.AuditCheckpoint, bool)) (domain.AuditCheckpoint, bool, error) {
	var (
		out    domain.AuditCheckpoint
		stored bool
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// SHARE ROW EXCLUSIVE conflicts with itself, not with readers.
		if _, err := tx.Exec(ctx, `LOCK TABLE audit_checkpoint IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		cps, err := queryCheckpoints(ctx, tx, `SELECT `+checkpointColumns+` FROM audit_checkpoint ORDER BY seq DESC LIMIT 1`)
		if err != nil {
			return err
		}
		var last *domain.AuditCheckpoint
		if len(cps) == 1 {
			last = &cps[0]
		}
		cp, ok := next(last)
		if !ok {
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO audit_checkpoint (`+checkpointColumns+`) VALUES ($1, $2, $3, $4, $5, $6)`,
			cp.Seq, cp.Hash, cp.Time.UnixMicro(), cp.Prev, cp.KeyID, cp.Signature); err != nil {
			return err
		}
		out, stored = cp, true
		return nil
	})
	if err != nil {
		return domain.AuditCheckpoint{}, false, storeErr("append checkpoint", err)
	}
	return out, stored, nil
}

// Checkpoints returns checkpoints after seq in increasing order.
func (s *Store) Checkpoints(ctx context.Context, after int64, limit int) ([]domain.AuditCheckpoint, error) {
	cps, err := queryCheckpoints(ctx, s.pool, `SELECT `+checkpointColumns+` FROM audit_checkpoint WHERE seq > $1 ORDER BY seq LIMIT $2`, after, limit)
	if err != nil {
		return nil, storeErr("query checkpoints", err)
	}
	return cps, nil
}

// LastCheckpoint returns the checkpoint with the highest seq.
func (s *Store) LastCheckpoint(ctx context.Context) (domain.AuditCheckpoint, bool, error) {
	cps, err := queryCheckpoints(ctx, s.pool, `SELECT `+checkpointColumns+` FROM audit_checkpoint ORDER BY seq DESC LIMIT 1`)
	if err != nil {
		return domain.AuditCheckpoint{}, false, storeErr("query checkpoints", err)
	}
	if len(cps) == 0 {
		return domain.AuditCheckpoint{}, false, nil
	}
	return cps[0], true, nil
}

// NewestCheckpointThrough returns the checkpoint with the highest seq at
// most seq.
func (s *Store) NewestCheckpointThrough(ctx context.Context, seq int64) (domain.AuditCheckpoint, bool, error) {
	cps, err := queryCheckpoints(ctx, s.pool, `SELECT `+checkpointColumns+` FROM audit_checkpoint WHERE seq <= $1 ORDER BY seq DESC LIMIT 1`, seq)
	if err != nil {
		return domain.AuditCheckpoint{}, false, storeErr("query checkpoints", err)
	}
	if len(cps) == 0 {
		return domain.AuditCheckpoint{}, false, nil
	}
	return cps[0], true, nil
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func queryCheckpoints(ctx context.Context, q querier, query string, args ...any) ([]domain.AuditCheckpoint, error) {
	rows, _ := q.Query(ctx, query, args...)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.AuditCheckpoint, error) {
		var (
			cp     domain.AuditCheckpoint
			micros int64
		)
		err := row.Scan(&cp.Seq, &cp.Hash, &micros, &cp.Prev, &cp.KeyID, &cp.Signature)
		cp.Time = time.UnixMicro(micros).UTC()
		return cp, err
	})
	if out == nil {
		out = []domain.AuditCheckpoint{}
	}
	return out, err
}
