package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// pool is a *sql.DB that prepares each distinct statement text once and
// reuses it. The pure-Go SQLite driver prepares from scratch on every
// ad-hoc query, and parsing cost more than running the small queries of the
// request path (measured: 39% of a session list's CPU).
type pool struct {
	*sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// maxCachedStatements bounds the cache: queries whose text varies with
// their input (IN lists) stop being cached once it is full.
const maxCachedStatements = 256

func newPool(db *sql.DB) *pool { return &pool{DB: db, stmts: map[string]*sql.Stmt{}} }

// stmt returns the prepared statement for query. Do not call it while the
// same goroutine holds a transaction on a one-connection pool: preparing
// needs a free connection.
func (p *pool) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st, ok := p.stmts[query]; ok {
		return st, nil
	}
	st, err := p.DB.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if len(p.stmts) < maxCachedStatements {
		p.stmts[query] = st
	}
	return st, nil
}

// QueryContext runs a cached prepared query.
func (p *pool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := p.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext runs a cached prepared query for one row.
func (p *pool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := p.stmt(ctx, query)
	if err != nil {
		return p.DB.QueryRowContext(ctx, query, args...) // reports the same error through Scan
	}
	return st.QueryRowContext(ctx, args...)
}

// ExecContext runs a cached prepared statement.
func (p *pool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := p.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// Close closes the cached statements and the pool.
func (p *pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, st := range p.stmts {
		errs = append(errs, st.Close())
	}
	clear(p.stmts)
	return errors.Join(append(errs, p.DB.Close())...)
}
