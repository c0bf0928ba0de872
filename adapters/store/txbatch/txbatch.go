// Package txbatch commits concurrent store changes together: callers hand
// their change to a writer, which runs everything waiting in one
// transaction, each change inside a savepoint of its own, and commits once.
// One sync then serves the whole batch, so durability does not cap how many
// changes a second the store takes. A caller is answered only once its
// batch is committed (or failed).
//
// The rule is the audit log's: a change that fails (a constraint, a row not
// found) is rolled back to its savepoint and fails only its own caller; the
// others commit. When the transaction itself breaks (the savepoint cannot
// be rolled back to, the commit fails: a full disk, a lost connection),
// every change of the batch that had not failed on its own fails with that
// error, and none of them is made.
package txbatch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// ErrClosed is returned by Do after Close.
var ErrClosed = fmt.Errorf("txbatch: closed: %w", domain.ErrUnavailable)

// maxBatch bounds one transaction, so a burst cannot hold the write lock
// for long; batchTimeout bounds how long its callers wait on a database
// that stopped answering.
const (
	maxBatch     = 256
	batchTimeout = 30 * time.Second
)

// DB is the store's side: a transaction on one connection, and the
// savepoint statements run in it.
type DB[T any] interface {
	Begin(ctx context.Context) (T, error)
	// Exec runs one statement without arguments in tx (the savepoints).
	Exec(ctx context.Context, tx T, stmt string) error
	Commit(ctx context.Context, tx T) error
	Rollback(tx T)
}

// Change is one caller's change, run in tx. Its ctx carries the caller's
// values but not its cancellation: a caller that leaves must not break the
// batch others share (SQLite rolls back the whole transaction of an
// interrupted statement).
type Change[T any] func(ctx context.Context, tx T) error

// valuesOf is the batch's context (deadline, cancellation) with the values
// of a caller's (its audit intent, its request id).
type valuesOf struct {
	context.Context
	values context.Context
}

func (c valuesOf) Value(key any) any { return c.values.Value(key) }

// Committer is the group-commit writer. Callers append to a queue under a
// mutex and wake a writer only when the queue starts, as the audit log's
// committer does.
type Committer[T any] struct {
	db      DB[T]
	mu      sync.Mutex
	queue   []*job[T]
	closed  bool
	wake    chan struct{} // one token: the queue started or has more
	closing chan struct{}
	stopped sync.WaitGroup
	pool    sync.Pool
}

type job[T any] struct {
	ctx  context.Context // the caller's, for its values only
	fn   Change[T]
	err  error
	done chan struct{}
}

// New starts writers (at least one) on db. SQLite has one writer anyway;
// a server database gains from a few, each committing its own batches.
func New[T any](db DB[T], writers int) *Committer[T] {
	c := &Committer[T]{db: db, wake: make(chan struct{}, 1), closing: make(chan struct{})}
	c.pool.New = func() any { return &job[T]{done: make(chan struct{}, 1)} }
	for range max(writers, 1) {
		c.stopped.Add(1)
		go c.run()
	}
	return c
}

// Do runs fn in the next batch and returns its error once the batch is
// committed. Once handed over, fn runs and commits even if ctx ends: Do
// still waits, so its caller never answers before knowing.
func (c *Committer[T]) Do(ctx context.Context, fn Change[T]) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j := c.pool.Get().(*job[T])
	j.ctx, j.fn, j.err = ctx, fn, nil
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.put(j)
		return ErrClosed
	}
	c.queue = append(c.queue, j)
	first := len(c.queue) == 1
	c.mu.Unlock()
	if first {
		c.signal()
	}
	<-j.done
	err := j.err
	c.put(j)
	return err
}

// signal wakes a writer, unless a token is waiting already.
func (c *Committer[T]) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Committer[T]) put(j *job[T]) {
	j.ctx, j.fn, j.err = nil, nil, nil
	c.pool.Put(j)
}

// Close runs every change already handed over and stops the writers.
func (c *Committer[T]) Close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.closing)
	}
	c.mu.Unlock()
	c.stopped.Wait()
}

// take removes up to maxBatch changes from the queue; ok is false once
// closed and drained.
func (c *Committer[T]) take(batch []*job[T]) ([]*job[T], bool) {
	for {
		c.mu.Lock()
		if n := min(len(c.queue), maxBatch); n > 0 {
			batch = append(batch[:0], c.queue[:n]...)
			rest := copy(c.queue, c.queue[n:])
			clear(c.queue[rest:])
			c.queue = c.queue[:rest]
			more := rest > 0
			c.mu.Unlock()
			if more { // another writer may start on the rest
				c.signal()
			}
			return batch, true
		}
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return nil, false
		}
		select {
		case <-c.wake:
		case <-c.closing: // the loop drains what is queued, then stops
		}
	}
}

func (c *Committer[T]) run() {
	defer c.stopped.Done()
	batch := make([]*job[T], 0, maxBatch)
	for {
		var ok bool
		if batch, ok = c.take(batch); !ok {
			return
		}
		c.commit(batch)
		for _, j := range batch {
			j.done <- struct{}{}
		}
		clear(batch)
	}
}

// savepoint is the name every change's savepoint takes: each is released
// or rolled back to before the next is made.
const savepoint = "SAVEPOINT change"

// commit runs batch in one transaction and sets each job's error.
func (c *Committer[T]) commit(batch []*job[T]) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	tx, err := c.db.Begin(ctx)
	if err != nil {
		failAll(batch, fmt.Errorf("begin: %w", err))
		return
	}
	if len(batch) == 1 {
		// Alone, the change needs no savepoint: the transaction is its own.
		j := batch[0]
		if j.err = j.fn(valuesOf{ctx, j.ctx}, tx); j.err != nil {
			c.db.Rollback(tx)
			return
		}
	} else if !c.each(ctx, tx, batch) {
		return
	}
	if err := c.db.Commit(ctx, tx); err != nil {
		c.db.Rollback(tx)
		failAll(batch, fmt.Errorf("commit: %w", err))
	}
}

// each runs every change of batch in tx, each in its own savepoint; false
// when the transaction broke (then rolled back, every job failed).
func (c *Committer[T]) each(ctx context.Context, tx T, batch []*job[T]) bool {
	for _, j := range batch {
		if err := c.db.Exec(ctx, tx, savepoint); err != nil {
			c.db.Rollback(tx)
			failAll(batch, fmt.Errorf("savepoint: %w", err))
			return false
		}
		if j.err = j.fn(valuesOf{ctx, j.ctx}, tx); j.err != nil {
			if err := c.db.Exec(ctx, tx, "ROLLBACK TO change"); err != nil {
				// The transaction is gone with the change (SQLite rolls
				// back the whole transaction on some errors): nothing of
				// the batch is made.
				c.db.Rollback(tx)
				failAll(batch, j.err)
				return false
			}
		}
		if err := c.db.Exec(ctx, tx, "RELEASE change"); err != nil {
			c.db.Rollback(tx)
			failAll(batch, fmt.Errorf("release savepoint: %w", err))
			return false
		}
	}
	return true
}

// failAll fails every job of batch that has not failed on its own.
func failAll[T any](batch []*job[T], err error) {
	for _, j := range batch {
		if j.err == nil {
			j.err = err
		}
	}
}
