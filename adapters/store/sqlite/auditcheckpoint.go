package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentauth/agentauth/domain"
)

const checkpointColumns = `seq, hash, time, prev, key_id, signature`

// AppendCheckpoint runs next and stores its checkpoint in one write
// transaction (the writer connection is single, so none runs alongside).
func (s *Store) AppendCheckpoint(ctx context.Context, next func(*domain.AuditCheckpoint) (domain.AuditCheckpoint, bool)) (domain.AuditCheckpoint, bool, error) {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return domain.AuditCheckpoint{}, false, fmt.Errorf("sqlite: begin checkpoint: %w", err)
	}
	defer tx.Rollback()
	var last *domain.AuditCheckpoint
	cps, err := scanCheckpoints(tx.QueryContext(ctx, `SELECT `+checkpointColumns+` FROM audit_checkpoint ORDER BY seq DESC LIMIT 1`))
	if err != nil {
		return domain.AuditCheckpoint{}, false, err
	}
	if len(cps) == 1 {
		last = &cps[0]
	}
	cp, ok := next(last)
	if !ok {
		return domain.AuditCheckpoint{}, false, nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO audit_checkpoint (`+checkpointColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
		cp.Seq, cp.Hash, cp.Time.UnixMicro(), cp.Prev, cp.KeyID, cp.Signature); err != nil {
		return domain.AuditCheckpoint{}, false, fmt.Errorf("sqlite: insert checkpoint: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return domain.AuditCheckpoint{}, false, fmt.Errorf("sqlite: commit checkpoint: %w", err)
	}
	return cp, true, nil
}

// Checkpoints returns checkpoints after seq in increasing order.
func (s *Store) Checkpoints(ctx context.Context, after int64, limit int) ([]domain.AuditCheckpoint, error) {
	return scanCheckpoints(s.read.QueryContext(ctx, `SELECT `+checkpointColumns+` FROM audit_checkpoint WHERE seq > ? ORDER BY seq`+limitClause(limit), after))
}

// LastCheckpoint returns the checkpoint with the highest seq.
func (s *Store) LastCheckpoint(ctx context.Context) (domain.AuditCheckpoint, bool, error) {
	cps, err := scanCheckpoints(s.read.QueryContext(ctx, `SELECT `+checkpointColumns+` FROM audit_checkpoint ORDER BY seq DESC LIMIT 1`))
	if err != nil || len(cps) == 0 {
		return domain.AuditCheckpoint{}, false, err
	}
	return cps[0], true, nil
}

func scanCheckpoints(rows *sql.Rows, err error) ([]domain.AuditCheckpoint, error) {
	if err != nil {
		return nil, fmt.Errorf("sqlite: query checkpoints: %w", err)
	}
	defer rows.Close()
	out := []domain.AuditCheckpoint{}
	for rows.Next() {
		var (
			cp     domain.AuditCheckpoint
			micros int64
		)
		if err := rows.Scan(&cp.Seq, &cp.Hash, &micros, &cp.Prev, &cp.KeyID, &cp.Signature); err != nil {
			return nil, fmt.Errorf("sqlite: scan checkpoint: %w", err)
		}
		cp.Time = time.UnixMicro(micros).UTC()
		out = append(out, cp)
	}
	if err := rows.Err(); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: read checkpoints: %w", err)
	}
	return out, nil
}
