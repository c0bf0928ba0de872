// Package sqlite is the embedded store of agentauth: one SQLite file under
// the data directory, opened with the pure-Go modernc.org/sqlite driver (no
// cgo), in WAL mode with synchronous=FULL so that a committed change
// survives a crash. The audit chain's durable copy is the append-only log
// of adapters/auditlog; this store is its index (auditindex.go). Schema
// migrations are applied at open.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
	sqlitedriver "modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentauth/agentauth/adapters/store/txbatch"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Path is the database file.
type Path string

// Store implements the store ports on SQLite. Writes go through a single
// connection (SQLite has one writer anyway); reads use a pool.
type Store struct {
	write *sql.DB
	read  *sql.DB
	log   *zap.Logger
	// batch commits the changes of concurrent requests together (intent.go).
	batch *txbatch.Committer[*sql.Tx]
	// The audit INSERTs, prepared once (audit.go, auditindex.go).
	auditChunk, auditOne, auditBlock, auditPosting *sql.Stmt
	// stmts holds the read pool's prepared statements by query text
	// (database/sql prepares each once per connection and keeps it).
	stmts sync.Map // string → *sql.Stmt
	// loginChanged is the login-session watcher's callback (login.go).
	loginChanged atomic.Pointer[func(idHash string)]
	stmtCount    atomic.Int32
}

var (
	_ ports.SessionStore  = (*Store)(nil)
	_ ports.AuditStore    = (*Store)(nil)
	_ ports.SettingsStore = (*Store)(nil)
)

// Open opens (creating if needed) the database at path and migrates it.
// The cleanup closes it.
func Open(path Path, log *zap.Logger) (*Store, func(), error) {
	if err := os.MkdirAll(filepath.Dir(string(path)), 0o700); err != nil {
		return nil, nil, fmt.Errorf("sqlite: create folder for %s: %w", path, err)
	}
	// Create the file ourselves so that it, and the -wal and -shm files SQLite
	// derives from it, are readable by the owner only.
	f, err := os.OpenFile(string(path), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	if err := errors.Join(f.Chmod(0o600), f.Close()); err != nil {
		return nil, nil, fmt.Errorf("sqlite: restrict %s to its owner: %w", path, err)
	}
	dsn := func(extra string) string {
		q := url.Values{}
		for _, p := range []string{"journal_mode(WAL)", "synchronous(FULL)", "busy_timeout(10000)", "foreign_keys(1)"} {
			q.Add("_pragma", p)
		}
		if extra != "" {
			q.Set("_txlock", extra)
		}
		return "file:" + string(path) + "?" + q.Encode()
	}
	write, err := sql.Open("sqlite", dsn("immediate"))
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	read, err := sql.Open("sqlite", dsn(""))
	if err != nil {
		write.Close()
		return nil, nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// The pure-Go driver is CPU-bound, so readers beyond two per core only
	// contend (measured: 8 readers made a session list 12% slower than 4 on
	// two cores). Keep every reader open: the driver pays for a new
	// connection with its pragmas and a schema read, which a request should not.
	readers := 2 * runtime.GOMAXPROCS(0)
	read.SetMaxOpenConns(readers)
	read.SetMaxIdleConns(readers)
	read.SetConnMaxIdleTime(0)
	s := &Store{write: write, read: read, log: log.Named("sqlite"), batch: txbatch.New[*sql.Tx](writer{write}, 1)}
	if err := errors.Join(s.migrate(context.Background()), s.prepareAudit(context.Background())); err != nil {
		s.close()
		return nil, nil, err
	}
	return s, s.close, nil
}

// OpenReadOnly opens an existing database for reading only, without
// migrating it: what `agentauth audit verify` needs to inspect a database
// (evidence) without changing a byte of it.
func OpenReadOnly(path Path, log *zap.Logger) (*Store, func(), error) {
	if _, err := os.Stat(string(path)); err != nil {
		return nil, nil, fmt.Errorf("sqlite: %w", err)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "busy_timeout(10000)")
	db, err := sql.Open("sqlite", "file:"+string(path)+"?"+q.Encode())
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s := &Store{write: db, read: db, log: log.Named("sqlite"), batch: txbatch.New[*sql.Tx](writer{db}, 1)}
	return s, func() { s.batch.Close(); db.Close() }, nil
}

// limitClause renders a LIMIT as a literal: SQLite re-prepares a statement
// whose LIMIT is a bound parameter on every run (the value may change the
// plan), which cost a third of a small query here. n <= 0 means no limit.
// maxStmts bounds the prepared statements: query texts are fixed or vary
// only with the number of projects in a filter, so this is never reached
// in practice, and past it a query simply runs unprepared.
const maxStmts = 256

// prepared returns the prepared read statement of query, or nil when it
// cannot be prepared (the caller then runs it directly, which reports the
// error).
func (s *Store) prepared(ctx context.Context, query string) *sql.Stmt {
	if st, ok := s.stmts.Load(query); ok {
		return st.(*sql.Stmt)
	}
	if s.stmtCount.Load() >= maxStmts {
		return nil
	}
	st, err := s.read.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	if prev, loaded := s.stmts.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt)
	}
	s.stmtCount.Add(1)
	return st
}

// queryRow runs a read of one row through its prepared statement.
func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := s.prepared(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.read.QueryRowContext(ctx, query, args...)
}

// queryRows runs a read through its prepared statement.
func (s *Store) queryRows(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := s.prepared(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.read.QueryContext(ctx, query, args...)
}

// noLimit is the bound LIMIT that means none (SQLite: any negative value).
// With prepared statements a bound LIMIT costs the same as a literal one
// (modernc v1.62.0: 47.9 vs 46.9 µs for 20 sessions), and one statement
// serves every limit.
func limitArg(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// limitClause renders a LIMIT as a literal (the audit queries' form; with
// the driver of before, modernc v1.40.1, a bound LIMIT cost a third of a
// small query, which no longer holds: see limitArg). n <= 0 means no limit.
func limitClause(n int) string {
	if n <= 0 {
		return ""
	}
	return " LIMIT " + strconv.Itoa(n)
}

func (s *Store) close() {
	s.batch.Close()
	s.stmts.Range(func(_, st any) bool {
		st.(*sql.Stmt).Close()
		return true
	})
	if err := errors.Join(s.read.Close(), s.write.Close()); err != nil {
		s.log.Error("close database", zap.Error(err))
	}
}

// migrate applies, in name order, every embedded migration not yet applied.
func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.write.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY)`); err != nil {
		return fmt.Errorf("sqlite: migrations table: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("sqlite: list migrations: %w", err)
	}
	sort.Strings(names)
	for _, name := range names {
		version := strings.TrimSuffix(filepath.Base(name), ".sql")
		if err := s.apply(ctx, version, name); err != nil {
			return fmt.Errorf("sqlite: migration %s: %w", version, err)
		}
	}
	return nil
}

func (s *Store) apply(ctx context.Context, version, name string) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	body, err := migrations.ReadFile(name)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, string(body)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version) VALUES (?)`, version); err != nil {
		return err
	}
	return tx.Commit()
}

// unavailable marks err as the store failing to serve now (503, as every
// store failure on PostgreSQL) when SQLite reports a resource of the
// machine at fault: the disk or the size limit full (SQLITE_FULL, "database
// or disk is full"), an I/O error, the file unopenable or read-only, memory,
// or the lock held beyond busy_timeout. Anything else (a constraint, a bad
// statement) stays the service's own fault, a 500.
func unavailable(err error) error {
	var se *sqlitedriver.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff { // the primary code; extended codes add bits above
	case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY,
		sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return errors.Join(err, domain.ErrUnavailable)
	}
	return err
}

// execOne makes the change what (with its audit intent) by a statement
// that must change one row; none is reported as domain.ErrNotFound naming
// missing, and changes nothing.
func (s *Store) execOne(ctx context.Context, what, missing, query string, args ...any) error {
	return s.change(ctx, what, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("sqlite: %s: %w", what, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%s: %w", missing, domain.ErrNotFound)
		}
		return nil
	})
}

// exec makes the change what (with its audit intent) by one statement; a
// duplicate key is domain.ErrConflict with the message dup.
func (s *Store) exec(ctx context.Context, what, dup, query string, args ...any) error {
	return s.change(ctx, what, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, query, args...)
		if isUnique(err) {
			return fmt.Errorf("%s: %w", dup, domain.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("sqlite: %s: %w", what, err)
		}
		return nil
	})
}
