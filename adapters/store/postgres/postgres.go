// Package postgres is the shared store of agentauth for cluster deployments:
// several instances behind a load balancer keep sessions, settings and the
// audit log in one PostgreSQL database (pgx v5, pgxpool), selected by
// SERVICE_DATABASE_URL / database.url. It implements the same store ports as
// the embedded SQLite store and passes the same conformance suites
// (ports/porttest).
//
// Two things make it safe to run many instances at once: migrations are
// applied at start under a PostgreSQL advisory lock, so instances starting
// together do not race; and every audit append locks the chain-head row
// (SELECT … FOR UPDATE) in its transaction, so appends from all instances
// form one unbroken hash chain.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/txbatch"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/pgurl"
	"github.com/agentauth/agentauth/ports"
)

//go:embed migrations/*.sql
var migrations embed.FS

// URL is the connection string, e.g.
// postgres://agentauth@db:5432/agentauth?sslmode=verify-full. Any parameter
// pgx does not know (such as search_path) is sent as a run-time parameter.
type URL string

// Store implements the store ports on PostgreSQL.
type Store struct {
	pool *pgxpool.Pool
	log  *zap.Logger
	// batch commits the changes of concurrent requests together (intent.go).
	batch *txbatch.Committer[pgx.Tx]
}

var (
	_ ports.SessionStore  = (*Store)(nil)
	_ ports.AuditStore    = (*Store)(nil)
	_ ports.SettingsStore = (*Store)(nil)
)

// connectTimeout bounds the first connection, so a wrong URL fails the start
// quickly instead of hanging.
const connectTimeout = 15 * time.Second

// Open connects, checks the connection and migrates the schema. The cleanup
// closes the pool.
func Open(ctx context.Context, url URL, log *zap.Logger) (*Store, func(), error) {
	if url == "" {
		return nil, nil, fmt.Errorf("%s: empty", urlSetting)
	}
	cfg, err := parseURL(string(url))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", urlSetting, err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "agentauth"
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", urlSetting, err)
	}
	s := &Store{pool: pool, log: log.Named("postgres")}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("%s: cannot connect to %s:%d/%s: %w", urlSetting, cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database, err)
	}
	if err := s.checkSchema(ctx, cfg.ConnConfig.Database, cfg.ConnConfig.User); err != nil {
		pool.Close()
		return nil, nil, err
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, nil, err
	}
	s.batch = txbatch.New[pgx.Tx](batchDB{pool}, writers(cfg.MaxConns))
	return s, func() { s.batch.Close(); pool.Close() }, nil
}

// urlSetting names the setting every start problem of the database is
// about.
const urlSetting = "database.url / SERVICE_DATABASE_URL"

// checkSchema makes sure the tables have a schema to go to: with none of
// search_path's schemas existing (a search_path=agentauth in the URL before
// CREATE SCHEMA agentauth), PostgreSQL's own words are "no schema has been
// selected to create in". The user's right to create tables there is the
// other first-start stumble (PostgreSQL 15 took CREATE on public from
// every user): it is explained where migrate meets it.
func (s *Store) checkSchema(ctx context.Context, database, user string) error {
	var schema *string
	var path string
	if err := s.pool.QueryRow(ctx, `SELECT current_schema(), current_setting('search_path')`).Scan(&schema, &path); err != nil {
		return fmt.Errorf("%s: read the schema: %w", urlSetting, err)
	}
	if schema == nil {
		// PostgreSQL passes over, silently, the schemas that do not exist
		// and those the user has no USAGE on: say both.
		return fmt.Errorf("%s: no schema of search_path (%s) both exists in database %s and may be used by user %s: create it (CREATE SCHEMA <name> AUTHORIZATION %s), let the user use it (GRANT USAGE, CREATE ON SCHEMA <name> TO %s), or name another in the URL's search_path",
			urlSetting, path, database, user, user, user)
	}
	return nil
}

// explainPrivilege tells a first migration refused for lack of the right
// to create tables in the schema what to grant.
func explainPrivilege(err error) error {
	if pgCode(err) != "42501" {
		return err
	}
	return fmt.Errorf("%s: the user may not create tables in the schema (GRANT CREATE ON SCHEMA <schema> TO <user>, or a schema the user owns in the URL's search_path): %w", urlSetting, err)
}

func parseURL(url string) (*pgxpool.Config, error) {
	cfg, err := pgurl.Parse(url)
	if err != nil {
		return nil, err
	}
	for name, value := range sessionDefaults {
		if _, set := cfg.ConnConfig.RuntimeParams[name]; !set {
			cfg.ConnConfig.RuntimeParams[name] = value
		}
	}
	return cfg, nil
}

// sessionDefaults bound how long the database may keep a request, or a
// lock, waiting; a connection string that sets one of them wins. The
// important one is idle_in_transaction_session_timeout: an instance that
// vanishes (network partition, frozen VM) in the middle of an audit append
// holds the chain-head lock, and every other instance's appends wait on it
// until PostgreSQL ends that session.
var sessionDefaults = map[string]string{
	"statement_timeout":                   "30s",
	"lock_timeout":                        "30s",
	"idle_in_transaction_session_timeout": "60s",
}

// migrate applies, in name order, every embedded migration not yet applied,
// holding a session advisory lock so that instances starting at the same time
// take turns. The lock key includes the schema, so separate schemas (tests,
// tenants) do not wait for each other.
func (s *Store) migrate(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	defer conn.Release()
	const key = `hashtext('agentauth.migrate.' || current_schema())`
	// Waiting for another instance's migration, or a long migration, is
	// not a stuck request: lift the session's time limits meanwhile.
	if _, err := conn.Exec(ctx, `SET statement_timeout = 0; SET lock_timeout = 0`); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	defer conn.Exec(context.Background(), `RESET statement_timeout; RESET lock_timeout`)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+key+`)`); err != nil {
		return fmt.Errorf("postgres: migrate: take advisory lock: %w", err)
	}
	defer func() {
		// A fresh context: the lock must be released even if ctx ended.
		if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_unlock(`+key+`)`); err != nil {
			s.log.Warn("release migration lock; it goes with the connection", zap.Error(err))
			conn.Conn().Close(context.Background())
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY)`); err != nil {
		return fmt.Errorf("postgres: migrations table: %w", explainPrivilege(err))
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("postgres: list migrations: %w", err)
	}
	sort.Strings(names)
	for _, name := range names {
		version := strings.TrimSuffix(path.Base(name), ".sql")
		if err := s.apply(ctx, conn.Conn(), version, name); err != nil {
			return fmt.Errorf("postgres: migration %s: %w", version, err)
		}
	}
	return nil
}

func (s *Store) apply(ctx context.Context, conn *pgx.Conn, version, name string) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM schema_migrations WHERE version = $1`, version).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		body, err := migrations.ReadFile(name)
		if err != nil {
			return err
		}
		// No arguments: pgx uses the simple protocol, which runs every
		// statement of the file.
		if _, err := tx.Exec(ctx, string(body)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, version); err != nil {
			return err
		}
		s.log.Info("applied migration", zap.String("version", version))
		return nil
	})
}

func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

func isUnique(err error) bool { return pgCode(err) == "23505" }

func isForeignKey(err error) bool { return pgCode(err) == "23503" }

// storeErr wraps a database error for the caller: a duplicate key is a
// domain conflict, a cancelled request stays a cancellation, and anything
// else means the shared database cannot serve the request now (503, not 500:
// retrying on another instance or later may well succeed).
func storeErr(op string, err error) error {
	switch {
	case isUnique(err):
		// The constraint's name is no business of the client's.
		return fmt.Errorf("%s: already exists: %w", op, domain.ErrConflict)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	return fmt.Errorf("postgres: %s: %w", op, errors.Join(err, domain.ErrUnavailable))
}
