package sqlite

import (
	"context"
	"strconv"
)

// CapAtPresentSize lets the database grow no further (PRAGMA max_page_count
// on the write connection, its only one): the next page it needs fails
// with SQLITE_FULL, "database or disk is full", as on a full disk.
func CapAtPresentSize(ctx context.Context, s *Store) error {
	var pages int
	if err := s.write.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		return err
	}
	_, err := s.write.ExecContext(ctx, "PRAGMA max_page_count = "+strconv.Itoa(pages))
	return err
}
