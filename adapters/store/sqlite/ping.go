package sqlite

import (
	"context"
	"fmt"
)

// Ping reports whether the database answers on the write connection, for
// the readiness check "database".
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.write.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return nil
}
