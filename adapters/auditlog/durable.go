package auditlog

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

// Durable is the audit store of SQLite mode: the chain lives in an
// append-only log (package wal) that is synced before AppendAudit returns,
// and is copied into the SQLite index right after, for queries. It owns the
// chain head in memory; the log's lock file keeps a second process out.
type Durable struct {
	log   *zap.Logger
	dir   string
	wal   *wal.Log
	index Index

	mu       sync.Mutex // serialises appends; guards cut
	cut      Cut        // records up to cut.Seq were removed (retention)
	retainMu sync.Mutex // one Retain at a time
	retainWG sync.WaitGroup
	seq      int64
	hash     string
	lastTime time.Time
	buf      []byte   // the batch's log entries, back to back
	ends     []int    // where each starts in buf
	entries  [][]byte // slices of buf

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
	w, err := wal.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	d := &Durable{log: log.Named("auditlog"), dir: dir, wal: w, index: index, hash: domain.GenesisHash,
		wake: make(chan struct{}, 1), hurry: make(chan struct{}, 1), advanced: make(chan struct{}), closing: make(chan struct{}), stopped: make(chan struct{})}
	if err := errors.Join(d.loadCut(), d.recover(context.Background())); err != nil {
		w.Close()
		return nil, nil, err
	}
	go d.runIndexer()
	if r.Keep > 0 {
		if r.Anchor == nil || r.After == nil {
			w.Close()
			return nil, nil, errors.New("auditlog: retention needs the signed checkpoints to cut at")
		}
		d.retainWG.Add(1)
		go d.runRetention(r)
	}
	return d, d.Close, nil
}

// AppendAudit seals the records onto the chain, writes them to the log and
// returns once the log is synced; the index follows right after. A record's
// time is raised to the previous record's when the clock went back (or two
// callers raced), so time never decreases along the chain and a time range
// is a range of sequence numbers.
func (d *Durable) AppendAudit(_ context.Context, records []domain.AuditRecord) error {
	if len(records) == 0 {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	seq, prev, last := d.seq, d.hash, d.lastTime
	d.buf, d.entries, d.ends = d.buf[:0], d.entries[:0], d.ends[:0]
	for i := range records {
		r := &records[i]
		seq++
		r.NotBefore(last)
		last = r.Time
		r.Seal(seq, prev)
		prev = r.Hash
		d.ends = append(d.ends, len(d.buf))
		d.buf = encode(d.buf, r)
	}
	// Slice the entries only now: encode may move d.buf while it grows.
	d.ends = append(d.ends, len(d.buf))
	for i := range records {
		d.entries = append(d.entries, d.buf[d.ends[i]:d.ends[i+1]])
	}
	at, err := d.wal.Append(d.entries)
	if err != nil {
		return fmt.Errorf("auditlog: %w", err)
	}
	d.seq, d.hash, d.lastTime = seq, prev, last
	d.pmu.Lock()
	if seq-d.indexed.Load() > maxBacklog {
		d.lagging = true // memory stays bounded while the index is broken
	}
	if !d.lagging {
		for i := range records {
			d.pending = append(d.pending, indexed(&records[i]))
			d.pendingAt = append(d.pendingAt, ports.AuditLocation{Seq: records[i].Seq, Segment: at.Segment, Offset: at.Offset})
			at.Offset += wal.FrameSize(len(d.entries[i]))
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
	return d.fetch(at)
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
	return d.fetch(at)
}

// fetch reads the records at the given places in the log.
func (d *Durable) fetch(at []ports.AuditLocation) ([]domain.AuditRecord, error) {
	pos := make([]wal.Pos, len(at))
	for i, a := range at {
		pos[i] = wal.Pos{Segment: a.Segment, Offset: a.Offset}
	}
	out := make([]domain.AuditRecord, len(at))
	err := d.wal.Fetch(pos, func(i int, data []byte) error {
		r, err := decode(data)
		if err != nil {
			return fmt.Errorf("auditlog: log entry %d: %w", at[i].Seq, err)
		}
		if r.Seq != at[i].Seq {
			return fmt.Errorf("auditlog: the index places record %d where the log holds record %d; restart to rebuild the index", at[i].Seq, r.Seq)
		}
		out[i] = r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("auditlog: %w", err)
	}
	return out, nil
}

// Close indexes what is pending, stops the indexer and closes the log.
func (d *Durable) Close() {
	d.once.Do(func() {
		close(d.closing)
		<-d.stopped
		d.retainWG.Wait()
		if err := d.wal.Close(); err != nil {
			d.log.Error("close audit log", zap.Error(err))
		}
	})
}
