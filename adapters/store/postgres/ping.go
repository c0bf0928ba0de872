package postgres

import (
	"context"
	"errors"
	"fmt"
)

// Ping reports whether the database answers and takes writes (a standby in
// recovery does not), for the readiness check "database".
func (s *Store) Ping(ctx context.Context) error {
	var standby bool
	if err := s.pool.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&standby); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if standby {
		return errors.New("postgres: the server is a standby in recovery and takes no writes")
	}
	return nil
}
