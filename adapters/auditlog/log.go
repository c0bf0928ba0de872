package auditlog

// The audit log: the chain on disk, in an append-only log (package wal).

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentauth/agentauth/adapters/auditarchive"
	"github.com/agentauth/agentauth/adapters/auditlog/wal"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Log is the audit chain on disk: records sealed onto the chain and
// written to an append-only log (package wal) that is synced before append
// returns, the chain's head (the newest record's seq, hash and time) and
// the retention cut. It reads records by number or by place; which
// records match a query is the index's to say (Durable). Its lock file
// keeps a second process out. Appends, cuts and removals are serialised by
// the caller; reads may run beside them.
type Log struct {
	dir      string
	wal      *wal.Log
	cut      Cut // records up to cut.Seq were removed (retention)
	seq      int64
	hash     string
	lastTime time.Time
	buf      []byte   // the batch's log entries, back to back
	ends     []int    // where each starts in buf
	entries  [][]byte // slices of buf
}

// openLog opens the log in dir and reads its retention cut.
func openLog(dir string) (*Log, error) {
	w, err := wal.Open(dir)
	if err != nil {
		return nil, err
	}
	l := &Log{dir: dir, wal: w, hash: domain.GenesisHash}
	if err := l.loadCut(); err != nil {
		w.Close()
		return nil, err
	}
	return l, nil
}

// loadHead reads the chain's head from the newest entry.
func (l *Log) loadHead() error {
	last, data := l.wal.Last()
	if last == 0 {
		return nil
	}
	head, err := decode(data)
	if err != nil {
		return fmt.Errorf("auditlog: newest log entry %d: %w", last, err)
	}
	l.seq, l.hash, l.lastTime = head.Seq, head.Hash, head.Time
	return nil
}

// append seals the records onto the chain and writes them to the log,
// synced. A record's time is raised to the previous record's when the
// clock went back (or two callers raced), so time never decreases along
// the chain and a time range is a range of sequence numbers. It returns
// where the first record is and the entries written (valid until the next
// append), from which the caller places the others.
func (l *Log) append(records []domain.AuditRecord) (wal.Pos, [][]byte, error) {
	seq, prev, last := l.seq, l.hash, l.lastTime
	l.buf, l.entries, l.ends = l.buf[:0], l.entries[:0], l.ends[:0]
	for i := range records {
		r := &records[i]
		seq++
		r.NotBefore(last)
		last = r.Time
		r.Seal(seq, prev)
		prev = r.Hash
		l.ends = append(l.ends, len(l.buf))
		l.buf = encode(l.buf, r)
	}
	// Slice the entries only now: encode may move l.buf while it grows.
	l.ends = append(l.ends, len(l.buf))
	for i := range records {
		l.entries = append(l.entries, l.buf[l.ends[i]:l.ends[i+1]])
	}
	at, err := l.wal.Append(l.entries)
	if err != nil {
		return at, nil, fmt.Errorf("auditlog: %w", err)
	}
	l.seq, l.hash, l.lastTime = seq, prev, last
	return at, l.entries, nil
}

// appendSealed writes records sealed elsewhere (a database's audit table
// from before the log) as they are.
func (l *Log) appendSealed(records []domain.AuditRecord) error {
	l.entries = l.entries[:0]
	for i := range records {
		l.entries = append(l.entries, encode(nil, &records[i]))
	}
	_, err := l.wal.Append(l.entries)
	return err
}

// newest is the number of the newest entry written (0: none), read from
// the log itself rather than the head.
func (l *Log) newest() int64 {
	last, _ := l.wal.Last()
	return int64(last)
}

// first is the number of the oldest entry kept.
func (l *Log) first() uint64 { return l.wal.First() }

// reader is a view of the log for reading beside appends.
func (l *Log) reader() *Log { return &Log{dir: l.dir, wal: l.wal.Reader()} }

// scan calls fn with every record numbered from..to, in order, and its
// place in the log.
func (l *Log) scan(from uint64, to int64, fn func(domain.AuditRecord, ports.AuditLocation) error) error {
	stop := errors.New("at target")
	err := l.wal.Scan(from, func(n uint64, pos wal.Pos, data []byte) error {
		if int64(n) > to {
			return stop
		}
		rec, err := decode(data)
		if err != nil {
			return fmt.Errorf("auditlog: log entry %d: %w", n, err)
		}
		return fn(rec, ports.AuditLocation{Seq: rec.Seq, Segment: pos.Segment, Offset: pos.Offset})
	})
	if errors.Is(err, stop) {
		return nil
	}
	return err
}

// entry reads log entry n.
func (l *Log) entry(n int64) (domain.AuditRecord, error) {
	var (
		r     domain.AuditRecord
		found bool
	)
	stop := errors.New("found")
	err := l.wal.Read(uint64(n), func(_ uint64, data []byte) error {
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

// fetch reads the records at the given places in the log.
func (l *Log) fetch(at []ports.AuditLocation) ([]domain.AuditRecord, error) {
	pos := make([]wal.Pos, len(at))
	for i, a := range at {
		pos[i] = wal.Pos{Segment: a.Segment, Offset: a.Offset}
	}
	out := make([]domain.AuditRecord, len(at))
	err := l.wal.Fetch(pos, func(i int, data []byte) error {
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

// chainStart is where verification of the records kept begins.
func (l *Log) chainStart() domain.ChainStart {
	if l.cut.Seq == 0 {
		return domain.Genesis
	}
	return domain.ChainStart{Next: l.cut.Seq + 1, Prev: l.cut.Hash}
}

func (l *Log) loadCut() error {
	b, err := os.ReadFile(filepath.Join(l.dir, cutFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = json.Unmarshal(b, &l.cut)
	}
	if err != nil {
		return fmt.Errorf("auditlog: read the retention cut: %w", err)
	}
	return nil
}

// writeCut makes cut durable before anything is removed: after a crash
// the removal is finished from it, and nothing below it is indexed again.
func (l *Log) writeCut(cut Cut) error {
	return writeFileSync(filepath.Join(l.dir, cutFile), mustJSON(cut))
}

// removeThrough removes the segments that hold nothing newer than seq.
func (l *Log) removeThrough(seq int64) error { return l.wal.RemoveBefore(uint64(seq) + 1) }

// archive writes records from..through, read from the log, to an archive
// file (adapters/auditarchive).
func (l *Log) archive(dir string, from, through int64) error {
	_, err := auditarchive.Write(dir, from, through, func(emit func(domain.AuditRecord) error) error {
		return l.wal.Read(uint64(from), func(n uint64, data []byte) error {
			r, err := decode(data)
			if err != nil {
				return fmt.Errorf("log entry %d: %w", n, err)
			}
			return emit(r)
		})
	})
	return err
}

func (l *Log) close() error { return l.wal.Close() }
