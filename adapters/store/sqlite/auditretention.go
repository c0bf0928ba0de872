package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// NewestCheckpointThrough is the signed checkpoint with the highest seq at
// most seq: where audit retention may cut the chain.
func (s *Store) NewestCheckpointThrough(ctx context.Context, seq int64) (domain.AuditCheckpoint, bool, error) {
	var (
		cp     domain.AuditCheckpoint
		micros int64
	)
	err := s.read.QueryRowContext(ctx, `SELECT seq, hash, time, prev, key_id, signature FROM audit_checkpoint
		WHERE seq <= ? ORDER BY seq DESC LIMIT 1`, seq).Scan(&cp.Seq, &cp.Hash, &micros, &cp.Prev, &cp.KeyID, &cp.Signature)
	if errors.Is(err, sql.ErrNoRows) {
		return cp, false, nil
	}
	if err != nil {
		return cp, false, fmt.Errorf("sqlite: read audit checkpoint: %w", err)
	}
	cp.Time = time.UnixMicro(micros).UTC()
	return cp, true, nil
}

// OldestCheckpointAfter is the signed checkpoint with the lowest seq above
// seq: where audit retention cuts next when checkpoints lie further apart
// than one of its steps.
func (s *Store) OldestCheckpointAfter(ctx context.Context, seq int64) (domain.AuditCheckpoint, bool, error) {
	cps, err := s.Checkpoints(ctx, seq, 1)
	if err != nil || len(cps) == 0 {
		return domain.AuditCheckpoint{}, false, err
	}
	return cps[0], true, nil
}
