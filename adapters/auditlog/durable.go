package auditlog

// Durable: the audit store of SQLite mode, the Log with an index that
// levels with it (at open, then in the background) and answers queries.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog/wal"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Index is where the log's records are and which match a query (the
// SQLite store); the records themselves are read from the log. It may lose
// its newest entries in a crash: the log is the source of truth and
// Durable replays what the index lacks at start.
type Index interface {
	// IndexAudit indexes sealed records, one run of seqs after the indexed
	// ones, at their places in the log, in one transaction that does not
	// wait for the disk, and settles their audit intents. It reads only
	// Seq, Time, Subject, Decision, Hash and IntentKey.
	IndexAudit(ctx context.Context, records []domain.AuditRecord, at []ports.AuditLocation) error
	// AuditIndexHead is the newest indexed record's Seq and Hash (0 and
	// "" when empty).
	AuditIndexHead(ctx context.Context) (int64, string, error)
	// ClearAuditIndex removes every indexed record, to rebuild it.
	ClearAuditIndex(ctx context.Context) error
	// DeleteAuditThrough removes the records up to seq (retention).
	DeleteAuditThrough(ctx context.Context, seq int64) error
	// FindAudit is where the records matching q are, newest first.
	FindAudit(ctx context.Context, q ports.AuditQuery) ([]ports.AuditLocation, error)
	// LocateAudit is where the records after seq are, in order, at most
	// limit (0: all).
	LocateAudit(ctx context.Context, after int64, limit int) ([]ports.AuditLocation, error)
	// AuditChain reads the audit table of a database from before the log
	// (records after seq, in order); ClearAuditTable empties it once the
	// log holds them.
	AuditChain(ctx context.Context, after int64, limit int) ([]domain.AuditRecord, error)
	ClearAuditTable(ctx context.Context) error
}

// indexBatch bounds one index transaction (a block); indexDelay is how
// long the indexer gathers records before writing them when no query
// waits. A block costs a row per subject in it, and a row costs ~30 µs
// here (a B-tree insert among the subject's earlier rows, its page written
// at commit): blocks of ~4,000 records from 1,000 subjects cost ~8 µs a
// record, blocks of 32,768 about 1 µs. A query does not wait for the
// delay (it hurries the indexer); a crash costs only replaying the log.
const (
	indexBatch = 32768
	indexDelay = 5 * time.Second
)

// maxIndexWait bounds how long a query waits for the index; maxBacklog how
// many records not yet indexed are kept in memory (variables for tests).
var (
	maxIndexWait = 5 * time.Second
	maxBacklog   = int64(200_000)
)

// Durable is the audit store of SQLite mode: the chain lives in the Log,
// synced before AppendAudit returns, and is copied into the index right
// after, in the background; queries wait until the index holds every
// record appended before they started, ask it where the matching records
// are and read them from the log.
type Durable struct {
	log   *zap.Logger
	chain *Log
	index Index

	mu       sync.Mutex // serialises appends, and guards the chain's cut
	retainMu sync.Mutex // one Retain at a time
	retainWG sync.WaitGroup

	durable atomic.Int64 // newest record in the log
	indexed atomic.Int64 // newest record in the index

	pmu       sync.Mutex
	pending   []domain.AuditRecord
	pendingAt []ports.AuditLocation // where each pending record is in the log
	// lagging: the index fell more than maxBacklog records behind; they
	// are no longer kept in memory but read back from the log.
	lagging  bool
	wake     chan struct{} // one token: there is pending work
	hurry    chan struct{} // one token: a query waits for the index
	advanced chan struct{} // closed and replaced whenever indexed moves
	closing  chan struct{}
	stopped  chan struct{}
	once     sync.Once
}

var _ ports.AuditStore = (*Durable)(nil)

// OpenDurable opens the log in dir, brings the index up to date with it
// (rebuilding it when it does not match) and starts the indexer, and the
// retention when r.Keep is set. The cleanup indexes what is pending and
// closes the log.
func OpenDurable(dir string, index Index, r Retention, log *zap.Logger) (*Durable, func(), error) {
	if r.Keep > 0 && (r.Anchor == nil || r.After == nil) {
		return nil, nil, errors.New("auditlog: retention needs the signed checkpoints to cut at")
	}
	chain, err := openLog(dir)
	if err != nil {
		return nil, nil, err
	}
	d := &Durable{log: log.Named("auditlog"), chain: chain, index: index,
		wake: make(chan struct{}, 1), hurry: make(chan struct{}, 1), advanced: make(chan struct{}), closing: make(chan struct{}), stopped: make(chan struct{})}
	if err := d.recover(context.Background()); err != nil {
		chain.close()
		return nil, nil, err
	}
	go d.runIndexer()
	if r.Keep > 0 {
		d.retainWG.Add(1)
		go d.runRetention(r)
	}
	return d, d.Close, nil
}

// AppendAudit seals the records onto the chain, writes them to the log and
// returns once the log is synced; the index follows right after.
func (d *Durable) AppendAudit(_ context.Context, records []domain.AuditRecord) error {
	if len(records) == 0 {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	at, entries, err := d.chain.append(records)
	if err != nil {
		return err
	}
	seq := d.chain.seq
	d.pmu.Lock()
	if seq-d.indexed.Load() > maxBacklog {
		d.lagging = true // memory stays bounded while the index is broken
	}
	if !d.lagging {
		for i := range records {
			d.pending = append(d.pending, indexed(&records[i]))
			d.pendingAt = append(d.pendingAt, ports.AuditLocation{Seq: records[i].Seq, Segment: at.Segment, Offset: at.Offset})
			at.Offset += wal.FrameSize(len(entries[i]))
		}
	}
	d.pmu.Unlock()
	// Pending first: a query that sees seq durable finds its records
	// pending or indexed.
	d.durable.Store(seq)
	select {
	case d.wake <- struct{}{}:
	default:
	}
	return nil
}

// QueryAudit finds the matching records in the index, once it has caught
// up, and reads them from the log.
func (d *Durable) QueryAudit(ctx context.Context, q ports.AuditQuery) ([]domain.AuditRecord, error) {
	if err := d.caughtUp(ctx); err != nil {
		return nil, err
	}
	at, err := d.index.FindAudit(ctx, q)
	if err != nil {
		return nil, err
	}
	return d.chain.fetch(at)
}

// AuditChain reads the records after seq from the log, where the index,
// once it has caught up, says they are.
func (d *Durable) AuditChain(ctx context.Context, after int64, limit int) ([]domain.AuditRecord, error) {
	if err := d.caughtUp(ctx); err != nil {
		return nil, err
	}
	at, err := d.index.LocateAudit(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	return d.chain.fetch(at)
}

// Close indexes what is pending, stops the indexer and closes the log.
func (d *Durable) Close() {
	d.once.Do(func() {
		close(d.closing)
		<-d.stopped
		d.retainWG.Wait()
		if err := d.chain.close(); err != nil {
			d.log.Error("close audit log", zap.Error(err))
		}
	})
}

// recover loads the head from the log and makes the index match it.
func (d *Durable) recover(ctx context.Context) error {
	iseq, ihash, err := d.index.AuditIndexHead(ctx)
	if err != nil {
		return err
	}
	if err := d.takeOverTable(ctx); err != nil {
		return err
	}
	l := d.chain
	if err := l.loadHead(); err != nil {
		return err
	}
	if iseq > l.seq {
		return fmt.Errorf("auditlog: the index holds records up to %d but the log in %s ends at %d: log segments are missing; restore them from a backup", iseq, l.dir, l.seq)
	}
	if iseq > l.cut.Seq && iseq >= int64(l.first()) {
		r, err := l.entry(iseq)
		if err != nil {
			return err
		}
		if r.Hash != ihash {
			d.log.Warn("audit index does not match the log; rebuilding it from the log", zap.Int64("seq", iseq))
			if err := d.index.ClearAuditIndex(ctx); err != nil {
				return err
			}
			iseq = 0
		}
	}
	// A cut whose removal a crash interrupted is finished first.
	if l.cut.Seq > 0 {
		if err := d.removeThrough(ctx, l.cut.Seq); err != nil {
			return err
		}
		iseq = max(iseq, l.cut.Seq)
	}
	if l.seq > iseq {
		from := max(uint64(iseq)+1, l.first())
		d.log.Info("indexing audit records from the log", zap.Uint64("from", from), zap.Int64("to", l.seq))
		if err := d.indexFromLog(ctx, l, from, l.seq, nil); err != nil {
			return err
		}
	}
	d.durable.Store(l.seq)
	d.indexed.Store(l.seq)
	return nil
}

// takeOverTable moves the records of the database's audit table into the
// log: a database from before the log kept the chain there (the log is
// empty: the table becomes its first part), or used the table as the
// log's index (the log holds them all already). Then the table is emptied.
func (d *Durable) takeOverTable(ctx context.Context) error {
	after := d.chain.newest()
	if after == 0 {
		recs, err := d.index.AuditChain(ctx, 0, 1)
		if err != nil || len(recs) == 0 {
			return err
		}
		d.log.Info("copying the audit records of the database into the audit log")
		for {
			recs, err := d.index.AuditChain(ctx, after, indexBatch)
			if err != nil {
				return err
			}
			if len(recs) == 0 {
				break
			}
			if recs[0].Seq != after+1 {
				return fmt.Errorf("auditlog: the database's audit chain has a gap before record %d", recs[0].Seq)
			}
			if err := d.chain.appendSealed(recs); err != nil {
				return err
			}
			after = recs[len(recs)-1].Seq
		}
	} else if beyond, err := d.index.AuditChain(ctx, after, 1); err != nil {
		return err
	} else if len(beyond) > 0 {
		return fmt.Errorf("auditlog: the database holds audit records up to at least %d but the log in %s ends at %d: log segments are missing; restore them from a backup", beyond[0].Seq, d.chain.dir, after)
	}
	return d.index.ClearAuditTable(ctx)
}

// indexFromLog indexes the records from..to of l (the log, or a reader of
// it), in batches, calling indexed after each.
func (d *Durable) indexFromLog(ctx context.Context, l *Log, from uint64, to int64, indexed func(seq int64)) error {
	batch := make([]domain.AuditRecord, 0, indexBatch)
	at := make([]ports.AuditLocation, 0, indexBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := d.index.IndexAudit(ctx, batch, at); err != nil {
			return err
		}
		if indexed != nil {
			indexed(batch[len(batch)-1].Seq)
		}
		batch, at = batch[:0], at[:0]
		return nil
	}
	err := l.scan(from, to, func(rec domain.AuditRecord, loc ports.AuditLocation) error {
		batch = append(batch, rec)
		at = append(at, loc)
		if len(batch) == indexBatch {
			return flush()
		}
		return nil
	})
	return errors.Join(err, flush())
}

// indexed is what the index needs of a sealed record (Index.IndexAudit),
// its text copied into memory of its own, in one allocation: the index is
// written after the caller has answered, and a caller's strings may live
// in buffers its HTTP server reuses for the next request (fasthttp's path
// and method do). The rest of the record is in the log.
func indexed(r *domain.AuditRecord) domain.AuditRecord {
	text := r.Subject + string(r.Decision) + r.IntentKey
	s, d := len(r.Subject), len(r.Subject)+len(r.Decision)
	return domain.AuditRecord{Seq: r.Seq, Time: r.Time, Hash: r.Hash, Subject: text[:s],
		Decision: domain.AuditDecision(text[s:d]), IntentKey: text[d:]}
}

// runIndexer copies pending records into the index, all that waited in one
// transaction, until Close.
func (d *Durable) runIndexer() {
	defer close(d.stopped)
	var (
		batch pendingBatch
		retry time.Duration
		timer = time.NewTimer(time.Hour)
	)
	timer.Stop()
	for {
		var again <-chan time.Time // only after a failure
		if retry > 0 {
			again = time.After(retry)
		}
		select {
		case <-d.wake:
			d.gather(timer)
		case <-d.hurry:
		case <-again:
		case <-d.closing:
			// What was appended before Close; the log has it either way.
			if err := d.indexPending(&batch); err != nil {
				d.log.Error("audit index behind the log at shutdown; it catches up at the next start", zap.Error(err))
			}
			return
		}
		if err := d.indexPending(&batch); err != nil {
			retry = min(max(2*retry, 10*time.Millisecond), time.Second)
			d.log.Error("audit index behind the log; retrying (the records are durable in the log)", zap.Error(err), zap.Duration("retry_in", retry))
			continue
		}
		retry = 0
	}
}

// gather waits up to indexDelay for more records, until indexBatch are
// pending, a query waits, or Close.
func (d *Durable) gather(timer *time.Timer) {
	timer.Reset(indexDelay)
	defer timer.Stop()
	for {
		d.pmu.Lock()
		n := len(d.pending)
		d.pmu.Unlock()
		if n >= indexBatch {
			return
		}
		select {
		case <-d.wake:
		case <-d.hurry:
			return
		case <-timer.C:
			return
		case <-d.closing:
			return
		}
	}
}

// pendingBatch is what the indexer took from pending and has not
// indexed yet.
type pendingBatch struct {
	records []domain.AuditRecord
	at      []ports.AuditLocation
}

// indexPending indexes what is pending now, in blocks of at most
// indexBatch; records appended meanwhile wait for the next round (indexing
// them at once would make blocks as small as what arrives while one is
// written). On failure the records stay pending, first in line.
func (d *Durable) indexPending(b *pendingBatch) error {
	d.pmu.Lock()
	lagging := d.lagging
	b.records, b.at = append(b.records, d.pending...), append(b.at, d.pendingAt...)
	d.pending, d.pendingAt = d.pending[:0], d.pendingAt[:0]
	d.pmu.Unlock()
	if lagging {
		b.records, b.at = b.records[:0], b.at[:0]
		return d.catchUpFromLog()
	}
	for len(b.records) > 0 {
		n := min(len(b.records), indexBatch)
		if err := d.index.IndexAudit(context.Background(), b.records[:n], b.at[:n]); err != nil {
			return err
		}
		d.advance(b.records[n-1].Seq)
		b.records, b.at = append(b.records[:0], b.records[n:]...), append(b.at[:0], b.at[n:]...)
	}
	return nil
}

// advance records that the index holds every record up to seq and wakes
// the queries waiting for it.
func (d *Durable) advance(seq int64) {
	d.indexed.Store(seq)
	d.pmu.Lock()
	close(d.advanced)
	d.advanced = make(chan struct{})
	d.pmu.Unlock()
}

// catchUpFromLog indexes, read back from the log, every record the index
// lacks, until it holds the head; then records are kept in memory again.
func (d *Durable) catchUpFromLog() error {
	for {
		d.mu.Lock()
		r, target := d.chain.reader(), d.chain.seq
		d.mu.Unlock()
		if err := d.indexFromLog(context.Background(), r, uint64(d.indexed.Load())+1, target, d.advance); err != nil {
			return err
		}
		d.mu.Lock()
		if d.indexed.Load() >= d.chain.seq {
			d.pmu.Lock()
			d.lagging, d.pending, d.pendingAt = false, d.pending[:0], d.pendingAt[:0]
			d.pmu.Unlock()
			d.mu.Unlock()
			return nil
		}
		d.mu.Unlock()
	}
}

// caughtUp waits until the index holds every record durable when it was
// called, so a query sees every record answered before it started.
func (d *Durable) caughtUp(ctx context.Context) error {
	target := d.durable.Load()
	if d.indexed.Load() >= target {
		return nil
	}
	select {
	case d.hurry <- struct{}{}:
	default:
	}
	// An index that cannot be written (disk full) must not hold a query
	// for ever: it is answered 503.
	ctx, cancel := context.WithTimeout(ctx, maxIndexWait)
	defer cancel()
	for {
		d.pmu.Lock()
		ch := d.advanced
		d.pmu.Unlock()
		if d.indexed.Load() >= target {
			return nil
		}
		select {
		case <-ch:
			select { // not there yet: the records came after that round
			case d.hurry <- struct{}{}:
			default:
			}
		case <-ctx.Done():
			return fmt.Errorf("auditlog: waiting for the audit index: %w", errors.Join(ctx.Err(), domain.ErrUnavailable))
		}
	}
}
