package txbatch

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// sqliteDB is a real SQLite database as the committer sees it, counting
// the transactions begun.
type sqliteDB struct {
	db     *sql.DB
	begins atomic.Int32
}

func (d *sqliteDB) Begin(ctx context.Context) (*sql.Tx, error) {
	d.begins.Add(1)
	return d.db.BeginTx(ctx, nil)
}

func (d *sqliteDB) Exec(ctx context.Context, tx *sql.Tx, stmt string) error {
	_, err := tx.ExecContext(ctx, stmt)
	return err
}

func (d *sqliteDB) Commit(_ context.Context, tx *sql.Tx) error { return tx.Commit() }
func (d *sqliteDB) Rollback(tx *sql.Tx)                        { _ = tx.Rollback() }

func openDB(t *testing.T) *sqliteDB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "t.db")+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE rows (name TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return &sqliteDB{db: db}
}

func insert(ctx context.Context, tx *sql.Tx, name string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO rows (name) VALUES (?)`, name)
	return err
}

func rows(t *testing.T, d *sqliteDB) map[string]bool {
	t.Helper()
	rs, err := d.db.Query(`SELECT name FROM rows`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	out := map[string]bool{}
	for rs.Next() {
		var n string
		if err := rs.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[n] = true
	}
	return out
}

// inOneBatch hands changes to c while a first change holds the writer, so
// that all of them wait in the queue, in the order given, and are taken as
// one batch; it returns each change's error.
func inOneBatch(t *testing.T, c *Committer[*sql.Tx], changes []Change[*sql.Tx]) []error {
	t.Helper()
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() {
		holder <- c.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
			close(started)
			<-release
			return insert(ctx, tx, "holder")
		})
	}()
	<-started
	errs := make([]error, len(changes))
	var wg sync.WaitGroup
	// One at a time, each queued before the next starts: the batch runs
	// them in the order given, which the tests' expectations depend on.
	for i, fn := range changes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Do(ctx, fn)
		}()
		for queued := 0; queued < i+1; runtime.Gosched() {
			c.mu.Lock()
			queued = len(c.queue)
			c.mu.Unlock()
		}
	}
	close(release)
	wg.Wait()
	if err := <-holder; err != nil {
		t.Fatalf("holder: %v", err)
	}
	return errs
}

var errOwn = errors.New("refused by its own change")

func TestFailingChangeFailsAlone(t *testing.T) {
	d := openDB(t)
	c := New[*sql.Tx](d, 1)
	t.Cleanup(c.Close)
	tests := []struct {
		name    string
		fn      Change[*sql.Tx]
		wantErr bool
		made    []string // rows the change leaves
	}{
		{"first succeeds", func(ctx context.Context, tx *sql.Tx) error { return insert(ctx, tx, "a") }, false, []string{"a"}},
		{"constraint after a write", func(ctx context.Context, tx *sql.Tx) error {
			if err := insert(ctx, tx, "partial"); err != nil {
				return err
			}
			return insert(ctx, tx, "a") // duplicate of the change before
		}, true, nil},
		{"between two failures", func(ctx context.Context, tx *sql.Tx) error { return insert(ctx, tx, "b") }, false, []string{"b"}},
		{"own error after a write", func(ctx context.Context, tx *sql.Tx) error {
			if err := insert(ctx, tx, "partial2"); err != nil {
				return err
			}
			return errOwn
		}, true, nil},
		{"last succeeds", func(ctx context.Context, tx *sql.Tx) error { return insert(ctx, tx, "c") }, false, []string{"c"}},
	}
	changes := make([]Change[*sql.Tx], len(tests))
	for i, tt := range tests {
		changes[i] = tt.fn
	}
	errs := inOneBatch(t, c, changes)
	if got, want := d.begins.Load(), int32(2); got != want {
		t.Fatalf("transactions = %d, want %d (the holder's, then one batch)", got, want)
	}
	got := rows(t, d)
	for i, tt := range tests {
		if (errs[i] != nil) != tt.wantErr {
			t.Errorf("%s: error = %v, want error %v", tt.name, errs[i], tt.wantErr)
		}
		for _, r := range tt.made {
			if !got[r] {
				t.Errorf("%s: row %s missing", tt.name, r)
			}
		}
	}
	if !errors.Is(errs[3], errOwn) {
		t.Errorf("own error = %v, want %v", errs[3], errOwn)
	}
	for _, r := range []string{"partial", "partial2"} {
		if got[r] {
			t.Errorf("row %s of a failed change was committed", r)
		}
	}
}

func TestBrokenTransactionMakesNothing(t *testing.T) {
	d := openDB(t)
	c := New[*sql.Tx](d, 1)
	t.Cleanup(c.Close)
	changes := []Change[*sql.Tx]{
		func(ctx context.Context, tx *sql.Tx) error { return insert(ctx, tx, "a") },
		func(ctx context.Context, tx *sql.Tx) error {
			// Ends the shared transaction, as SQLite does itself on some
			// errors: its savepoint is gone with it.
			if _, err := tx.ExecContext(ctx, `ROLLBACK`); err != nil {
				return err
			}
			return fmt.Errorf("transaction lost")
		},
		func(ctx context.Context, tx *sql.Tx) error { return insert(ctx, tx, "b") },
	}
	errs := inOneBatch(t, c, changes)
	for i, err := range errs {
		if err == nil {
			t.Errorf("change %d: no error, want the batch failed", i)
		}
	}
	if got := rows(t, d); got["a"] || got["b"] {
		t.Errorf("rows after a broken batch: %v, want none of it", got)
	}
	// The writer goes on with the next batch.
	if err := c.Do(context.Background(), func(ctx context.Context, tx *sql.Tx) error { return insert(ctx, tx, "after") }); err != nil {
		t.Fatalf("change after a broken batch: %v", err)
	}
}

func TestClosedCommitterRefuses(t *testing.T) {
	c := New[*sql.Tx](openDB(t), 1)
	c.Close()
	if err := c.Do(context.Background(), func(context.Context, *sql.Tx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("Do after Close: %v, want ErrClosed", err)
	}
}

// TestLoneChange: a change alone in its batch runs without a savepoint,
// and its failure still leaves nothing of it.
func TestLoneChange(t *testing.T) {
	d := openDB(t)
	c := New[*sql.Tx](d, 1)
	t.Cleanup(c.Close)
	ctx := context.Background()
	err := c.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := insert(ctx, tx, "partial"); err != nil {
			return err
		}
		return errOwn
	})
	if !errors.Is(err, errOwn) {
		t.Fatalf("failing lone change: %v, want %v", err, errOwn)
	}
	if err := c.Do(ctx, func(ctx context.Context, tx *sql.Tx) error { return insert(ctx, tx, "made") }); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, d); got["partial"] || !got["made"] {
		t.Errorf("rows %v, want only made", got)
	}
}
