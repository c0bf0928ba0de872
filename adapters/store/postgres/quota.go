package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

var _ ports.QuotaStore = (*Store)(nil)

// chargeQuota counts one call in its window, under the row's lock until
// the transaction ends, so that every instance counts in turn: a later
// window the row holds stays (another instance's clock is ahead), an
// earlier one starts anew. It returns the count and the window's end.
const chargeQuota = `INSERT INTO quota_counters (key, window_start, window_end, calls) VALUES ($1, $2, $3, 1)
ON CONFLICT (key) DO UPDATE SET
  calls = CASE WHEN quota_counters.window_start >= excluded.window_start THEN quota_counters.calls + 1 ELSE 1 END,
  window_end = GREATEST(quota_counters.window_end, excluded.window_end),
  window_start = GREATEST(quota_counters.window_start, excluded.window_start)
RETURNING calls, window_end`

// usedUp carries, out of a rolled-back change, which charge was over.
type usedUp struct {
	index int
	end   time.Time
}

func (u *usedUp) Error() string { return "quota used up" }

// ChargeQuotas counts one call against each charge, all or none.
func (s *Store) ChargeQuotas(ctx context.Context, charges []domain.QuotaCharge) (int, time.Time, error) {
	err := s.batch.Do(ctx, func(ctx context.Context, tx pgx.Tx) error {
		for i, c := range charges {
			var calls, end int64
			if err := tx.QueryRow(ctx, chargeQuota, c.Key, nanos(c.Start), nanos(c.End)).Scan(&calls, &end); err != nil {
				return storeErr("count quota", err)
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
	if err != nil {
		return -1, time.Time{}, txErr("count quotas", err)
	}
	return -1, time.Time{}, nil
}

// QuotaUse lists the counters of windows not ended at now, fullest first.
func (s *Store) QuotaUse(ctx context.Context, now time.Time, limit int) ([]domain.QuotaUse, error) {
	rows, _ := s.pool.Query(ctx, `SELECT key, window_start, window_end, calls FROM quota_counters WHERE window_end > $1 ORDER BY calls DESC, key LIMIT $2`, nanos(now), limit)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.QuotaUse, error) {
		var (
			u          domain.QuotaUse
			start, end int64
		)
		err := row.Scan(&u.Key, &start, &end, &u.Calls)
		u.Start, u.End = fromNanos(start), fromNanos(end)
		return u, err
	})
	if err != nil {
		return nil, storeErr("list quota use", err)
	}
	return nonNil(out), nil
}
