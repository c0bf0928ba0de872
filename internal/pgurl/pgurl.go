// Package pgurl parses a PostgreSQL connection string without connecting,
// for the configuration's validation and the PostgreSQL store alike. Its
// errors never repeat the string, which may hold a password.
package pgurl

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Parse reads url as a pool configuration.
func Parse(url string) (*pgxpool.Config, error) {
	if !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") && !strings.Contains(url, "=") {
		return nil, errors.New("not a PostgreSQL connection string: want postgres://user@host:5432/dbname?sslmode=verify-full or key=value pairs such as host=db dbname=agentauth")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message may quote the string, and with it a password: say less.
		return nil, errors.New("not a valid PostgreSQL connection string (check the URL syntax, the port and the pool_* and sslmode parameters)")
	}
	return cfg, nil
}
