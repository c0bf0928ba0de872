package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

var _ ports.QuotaStore = (*Store)(nil)

// chargeQuota counts one call of c in tx: a later window the row holds
// stays (another instance's clock is ahead), an earlier one starts anew.
// It returns the count and the end of the window counted in.
const chargeQuota = `INSERT INTO quota_counters (key, window_start, window_end, calls) VALUES (?, ?, ?, 1)
ON CONFLICT (key) DO UPDATE SET
  calls = CASE WHEN quota_counters.window_start >= excluded.window_start THEN quota_counters.calls + 1 ELSE 1 END,
  window_end = MAX(quota_counters.window_end, excluded.window_end),
  window_start = MAX(quota_counters.window_start, excluded.window_start)
RETURNING calls, window_end`

// usedUp carries, out of a rolled-back change, which charge was over.
type usedUp struct {
	index int
	end   time.Time
}

func (u *usedUp) Error() string { return "quota used up" }

// ChargeQuotas counts one call against each charge, all or none.
func (s *Store) ChargeQuotas(ctx context.Context, charges []domain.QuotaCharge) (int, time.Time, error) {
	err := s.batch.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for i, c := range charges {
			var calls, end int64
			if err := tx.QueryRowContext(ctx, chargeQuota, c.Key, nanos(c.Start), nanos(c.End)).Scan(&calls, &end); err != nil {
				return fmt.Errorf("sqlite: count quota %s: %w", c.Key, err)
			}
			if calls > int64(c.Limit.Calls) {
				return &usedUp{i, fromNanos(end)}
			}
		}
		return nil
	})
	var u *usedUp
	if errors.As(err, &u) {
		return u.index, u.end, nil
	}
	return -1, time.Time{}, unavailable(err)
}

// QuotaUse lists the counters of windows not ended at now, fullest first.
func (s *Store) QuotaUse(ctx context.Context, now time.Time, limit int) ([]domain.QuotaUse, error) {
	rows, err := s.queryRows(ctx, `SELECT key, window_start, window_end, calls FROM quota_counters WHERE window_end > ? ORDER BY calls DESC, key LIMIT ?`, nanos(now), limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list quota use: %w", err)
	}
	defer rows.Close()
	out := []domain.QuotaUse{}
	for rows.Next() {
		var (
			u          domain.QuotaUse
			start, end int64
		)
		if err := rows.Scan(&u.Key, &start, &end, &u.Calls); err != nil {
			return nil, fmt.Errorf("sqlite: scan quota use: %w", err)
		}
		u.Start, u.End = fromNanos(start), fromNanos(end)
		out = append(out, u)
	}
	return out, rows.Err()
}
