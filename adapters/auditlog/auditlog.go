// Package auditlog turns any ports.AuditStore into a ports.AuditLog with
// group commit: concurrent requests hand their records to one writer, which
// commits everything waiting in one transaction and then releases every
// waiter. A caller returns only after its own record is durable, and one
// fsync serves a whole batch, so durability does not cap throughput. Under
// load the writer waits a little (Options.BatchWait) for a bigger batch: a
// sync costs ~100 µs of CPU here, shared by every record of the batch.
//
// A store that refuses a record (ports.ErrRecordRefused) fails only that
// record: the writer splits the batch and commits the rest.
//
// In SQLite mode the store is Durable: an append-only log, synced per batch,
// indexed into SQLite for queries.
package auditlog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/telemetry"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// ErrClosed is returned by Record after Close.
var ErrClosed = errors.New("auditlog: closed")

// maxBatch bounds one transaction, so a burst cannot hold the write lock for
// long; fullBatch is the size at which the writer stops waiting for more.
const (
	maxBatch  = 512
	fullBatch = 64
)

// Options tune the writer.
type Options struct {
	// BatchWait is how long the writer, under load (the previous batch had
	// more than one record), waits for a batch to reach fullBatch records
	// before committing it. 0 commits at once.
	BatchWait time.Duration
	// Observer, when set, is told the chain's head after every committed
	// batch (the checkpoint signer).
	Observer ports.AuditObserver
}

// Committer is the group-commit writer. Callers append to a queue under a
// mutex and wake the writer only when the queue starts or reaches a full
// batch, so handing a record over costs no goroutine switch (measured: an
// unbuffered channel cost two parks and two wake-ups per record).
type Committer struct {
	store   ports.AuditStore
	wait    time.Duration
	observe ports.AuditObserver
	log     *zap.Logger
	mu      sync.Mutex
	queue   []*pending
	closed  bool
	wake    chan struct{} // one token: the queue started, or is a full batch
	closing chan struct{}
	stopped chan struct{}
	once    sync.Once
	pool    sync.Pool
	// queued counts records handed to Record and not yet committed (the
	// audit queue depth of GET /metrics).
	queued atomic.Int64
	// lastErr is the error of the last commit, nil after a good one (Ready).
	lastErr atomic.Pointer[error]
}

// Depth is the number of records waiting to be committed now.
func (c *Committer) Depth() int64 { return c.queued.Load() }

type pending struct {
	rec  domain.AuditRecord
	done chan error
}

var _ ports.AuditLog = (*Committer)(nil)

// New starts the writer. The returned cleanup commits what is pending and
// stops it; call it after the HTTP server has drained.
func New(store ports.AuditStore, opts Options, log *zap.Logger) (*Committer, func()) {
	c := &Committer{
		store:   store,
		wait:    opts.BatchWait,
		observe: opts.Observer,
		log:     log.Named("auditlog"),
		wake:    make(chan struct{}, 1),
		closing: make(chan struct{}),
		stopped: make(chan struct{}),
	}
	c.pool.New = func() any { return &pending{done: make(chan error, 1)} }
	go c.run()
	return c, c.Close
}

// Record hands r to the writer and waits until it is committed. Once handed
// over, the record is committed even if ctx ends; Record then still waits so
// that the caller never answers before its record is durable.
func (c *Committer) Record(ctx context.Context, r domain.AuditRecord) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("auditlog: %w", err)
	}
	c.queued.Add(1)
	defer c.queued.Add(-1)
	p := c.pool.Get().(*pending)
	p.rec = r
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		p.rec = domain.AuditRecord{}
		c.pool.Put(p)
		return ErrClosed
	}
	c.queue = append(c.queue, p)
	n := len(c.queue)
	c.mu.Unlock()
	if n == 1 || n == fullBatch {
		select {
		case c.wake <- struct{}{}:
		default: // a token is waiting already
		}
	}
	err := <-p.done
	p.rec = domain.AuditRecord{}
	c.pool.Put(p)
	return err
}

// Close commits every record already handed over and stops the writer.
func (c *Committer) Close() {
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		close(c.closing)
	})
	<-c.stopped
}

// queueLen is the number of records waiting.
func (c *Committer) queueLen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

func (c *Committer) run() {
	defer close(c.stopped)
	batch := make([]*pending, 0, maxBatch)
	recs := make([]domain.AuditRecord, 0, maxBatch)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	loaded := false // the previous batch had company
	for {
		n := c.queueLen()
		if n == 0 {
			select {
			case <-c.wake:
				continue
			case <-c.closing:
				if c.queueLen() == 0 {
					return // closed: nothing can be queued any more
				}
				continue
			}
		}
		if loaded && c.wait > 0 && n < fullBatch {
			// Under load: wait a little for a full batch. A token left
			// from before is stale (the queue has not been empty since);
			// the next one says the queue reached fullBatch.
			select {
			case <-c.wake:
			default:
			}
			if c.queueLen() < fullBatch {
				timer.Reset(c.wait)
				select {
				case <-c.wake:
				case <-timer.C:
				case <-c.closing:
				}
				timer.Stop()
			}
		}
		c.mu.Lock()
		take := min(len(c.queue), maxBatch)
		batch = append(batch[:0], c.queue[:take]...)
		rest := copy(c.queue, c.queue[take:])
		clear(c.queue[rest:])
		c.queue = c.queue[:rest]
		c.mu.Unlock()
		loaded = len(batch) > 1
		recs = recs[:0]
		for _, p := range batch {
			recs = append(recs, p.rec)
		}
		c.commit(batch, recs)
	}
}

// commit appends recs (the records of batch, in order) and answers every
// waiter. When the store refuses a record, the batch is split in halves,
// each committed on its own, down to the records that cannot be written.
func (c *Committer) commit(batch []*pending, recs []domain.AuditRecord) {
	start := time.Now()
	err := c.store.AppendAudit(context.Background(), recs)
	telemetry.AuditCommitted(time.Since(start), err)
	refused := errors.Is(err, ports.ErrRecordRefused)
	if refused && len(batch) > 1 {
		mid := len(batch) / 2
		c.commit(batch[:mid], recs[:mid])
		c.commit(batch[mid:], recs[mid:])
		return
	}
	switch {
	case err != nil && !refused: // the store is failing, not one record
		failed := err
		c.lastErr.Store(&failed)
	case err == nil && c.lastErr.Load() != nil:
		c.lastErr.Store(nil)
	}
	if err != nil {
		c.log.Error("audit commit failed; requests in this batch are answered with an error", zap.Int("records", len(recs)), zap.Error(err))
		err = fmt.Errorf("auditlog: commit: %w", errors.Join(err, domain.ErrUnavailable))
	} else if c.observe != nil {
		head := &recs[len(recs)-1] // sealed by the store
		c.observe.Observe(head.Seq, head.Hash)
	}
	for _, p := range batch {
		p.done <- err
	}
}
