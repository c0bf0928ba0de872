package auditlog

// The index side of Durable: the Index port, bringing it level with the
// log at open (recover), and the background indexer that copies appended
// records into it and lets readers wait until it has caught up.

import (
	"context"
	"errors"
	"fmt"
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

// recover loads the head from the log and makes the index match it.
func (d *Durable) recover(ctx context.Context) error {
	iseq, ihash, err := d.index.AuditIndexHead(ctx)
	if err != nil {
		return err
	}
	if err := d.takeOverTable(ctx); err != nil {
		return err
	}
	last, data := d.wal.Last()
	if last > 0 {
		head, err := decode(data)
		if err != nil {
			return fmt.Errorf("auditlog: newest log entry %d: %w", last, err)
		}
		d.seq, d.hash, d.lastTime = head.Seq, head.Hash, head.Time
	}
	if iseq > d.seq {
		return fmt.Errorf("auditlog: the index holds records up to %d but the log in %s ends at %d: log segments are missing; restore them from a backup", iseq, d.dir, d.seq)
	}
	if iseq > d.cut.Seq && iseq >= int64(d.wal.First()) {
		r, err := d.entry(iseq)
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
	if d.cut.Seq > 0 {
		if err := d.removeThrough(ctx, d.cut.Seq); err != nil {
			return err
		}
		iseq = max(iseq, d.cut.Seq)
	}
	if d.seq > iseq {
		from := max(uint64(iseq)+1, d.wal.First())
		d.log.Info("indexing audit records from the log", zap.Uint64("from", from), zap.Int64("to", d.seq))
		if err := d.indexFromLog(ctx, d.wal, from, d.seq, nil); err != nil {
			return err
		}
	}
	d.durable.Store(d.seq)
	d.indexed.Store(d.seq)
	return nil
}

// entry reads log entry n.
func (d *Durable) entry(n int64) (domain.AuditRecord, error) {
	var (
		r     domain.AuditRecord
		found bool
	)
	stop := errors.New("found")
	err := d.wal.Read(uint64(n), func(_ uint64, data []byte) error {
		var err error
		r, err = decode(data)
		found = true
		if err != nil {
			return err
		}
		return stop
	})
	if !errors.Is(err, stop) {
		if err == nil && !found {
			err = fmt.Errorf("auditlog: log entry %d missing", n)
		}
		return r, err
	}
	return r, nil
}

// takeOverTable moves the records of the database's audit table into the
// log: a database from before the log kept the chain there (the log is
// empty: the table becomes its first part), or used the table as the
// log's index (the log holds them all already). Then the table is emptied.
func (d *Durable) takeOverTable(ctx context.Context) error {
	last, _ := d.wal.Last()
	after := int64(last)
	if last == 0 {
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
			d.entries = d.entries[:0]
			for i := range recs {
				d.entries = append(d.entries, encode(nil, &recs[i]))
			}
			if _, err := d.wal.Append(d.entries); err != nil {
				return err
			}
			after = recs[len(recs)-1].Seq
		}
	} else if beyond, err := d.index.AuditChain(ctx, after, 1); err != nil {
		return err
	} else if len(beyond) > 0 {
		return fmt.Errorf("auditlog: the database holds audit records up to at least %d but the log in %s ends at %d: log segments are missing; restore them from a backup", beyond[0].Seq, d.dir, after)
	}
	return d.index.ClearAuditTable(ctx)
}

// indexFromLog indexes the log's records from..to (read with r), in
// batches, calling indexed after each.
func (d *Durable) indexFromLog(ctx context.Context, r *wal.Log, from uint64, to int64, indexed func(seq int64)) error {
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
	stop := errors.New("at target")
	err := r.Scan(from, func(n uint64, pos wal.Pos, data []byte) error {
		if int64(n) > to {
			return stop
		}
		rec, err := decode(data)
		if err != nil {
			return fmt.Errorf("auditlog: log entry %d: %w", n, err)
		}
		batch = append(batch, rec)
		at = append(at, ports.AuditLocation{Seq: rec.Seq, Segment: pos.Segment, Offset: pos.Offset})
		if len(batch) == indexBatch {
			return flush()
		}
		return nil
	})
	if errors.Is(err, stop) {
		err = nil
	}
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
		r, target := d.wal.Reader(), d.seq
		d.mu.Unlock()
		if err := d.indexFromLog(context.Background(), r, uint64(d.indexed.Load())+1, target, d.advance); err != nil {
			return err
		}
		d.mu.Lock()
		if d.indexed.Load() >= d.seq {
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
