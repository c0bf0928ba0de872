package auditlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditarchive"
	"github.com/agentauth/agentauth/adapters/auditlog/wal"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Retention moves records older than Keep out of the log and its index.
type Retention struct {
	// Keep is how long records are kept; 0 keeps them for ever.
	Keep time.Duration
	// Archive writes the records removed into gzip-compressed NDJSON files
	// under ArchiveDir before removing them; false drops them (they were
	// exported elsewhere).
	Archive    bool
	ArchiveDir string
	// Anchor returns the newest signed checkpoint covering at most record
	// seq (ok false when there is none). The cut is made there, so the
	// kept chain starts right after a signed checkpoint and verifies from
	// it; records between it and seq wait for the next checkpoint.
	Anchor func(ctx context.Context, seq int64) (cp domain.AuditCheckpoint, ok bool, err error)
	// After returns the oldest signed checkpoint past record seq (ok
	// false when there is none): the next cut when checkpoints lie further
	// apart than a step.
	After func(ctx context.Context, seq int64) (cp domain.AuditCheckpoint, ok bool, err error)
}

// retentionStep bounds the records one cut removes (one archive each), so
// that a backlog is removed in steps a run stopped by its time limit keeps.
var retentionStep int64 = 1_000_000

// Cut is where the kept chain starts: every record up to Seq was removed,
// and Hash is record Seq's hash (the next record's prev_hash).
type Cut struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// cutFile holds the Cut in the log's folder.
const cutFile = "CUT"

// ChainStart is where verification of the records kept begins: the first
// record, or the record after the retention cut.
func (d *Durable) ChainStart(context.Context) (domain.ChainStart, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.chain.chainStart(), nil
}

// LogStart is where the chain kept in the audit log in dir starts: the
// first record, or the one after the retention cut.
func LogStart(dir string) (domain.ChainStart, error) {
	l := &Log{dir: dir}
	if err := l.loadCut(); err != nil {
		return domain.Genesis, err
	}
	return l.chainStart(), nil
}

// ReadLog calls emit for every record of the audit log in dir numbered
// from on, in order, without opening the log for appends (wal.ReadDir:
// beside a running service, or on a copy). `agentauth audit verify` reads
// it in SQLite mode: the log, not its index, is the record.
func ReadLog(dir string, from int64, emit func(domain.AuditRecord) error) error {
	return wal.ReadDir(dir, uint64(max(from, 1)), func(n uint64, data []byte) error {
		r, err := decode(data)
		if err != nil {
			return fmt.Errorf("auditlog: log entry %d: %w", n, err)
		}
		return emit(r)
	})
}

// Retain removes every record older than now minus r.Keep, up to the
// newest signed checkpoint among them, archiving them first when
// r.Archive; a backlog longer than retentionStep is cut in several steps,
// at the checkpoints in between, one archive each. It returns the new cut
// (unchanged when nothing was removed); a run stopped midway keeps the
// steps it finished. Appends go on meanwhile.
func (d *Durable) Retain(ctx context.Context, r Retention, now time.Time) (Cut, error) {
	d.retainMu.Lock()
	defer d.retainMu.Unlock()
	d.mu.Lock()
	cut := d.chain.cut
	d.mu.Unlock()
	older, err := d.QueryAudit(ctx, ports.AuditQuery{Until: now.Add(-r.Keep), Limit: 1})
	if err != nil || len(older) == 0 {
		return cut, err
	}
	for {
		// The archive does not watch ctx: a step ends, the next does not start.
		if err := ctx.Err(); err != nil {
			return cut, err
		}
		cp, ok, err := nextCut(ctx, r, cut.Seq, older[0].Seq)
		if err != nil || !ok {
			return cut, err
		}
		if cut, err = d.cutAt(ctx, r, cut, cp); err != nil {
			return cut, err
		}
	}
}

// nextCut is the checkpoint the cut after record after moves to: the
// newest at most retentionStep records past it and at most through, else
// (checkpoints further apart than a step) the oldest past it, when at most
// through.
func nextCut(ctx context.Context, r Retention, after, through int64) (domain.AuditCheckpoint, bool, error) {
	cp, ok, err := r.Anchor(ctx, min(through, after+retentionStep))
	if err != nil || ok && cp.Seq > after {
		return cp, ok, err
	}
	cp, ok, err = r.After(ctx, after)
	return cp, ok && cp.Seq <= through, err
}

// cutAt removes the records from old up to checkpoint cp: archived (when
// r.Archive), the cut written, then removed. It returns the cut, moved
// once it is written.
func (d *Durable) cutAt(ctx context.Context, r Retention, old Cut, cp domain.AuditCheckpoint) (Cut, error) {
	at, err := d.chain.entry(cp.Seq)
	if err != nil {
		return old, err
	}
	if at.Hash != cp.Hash {
		return old, fmt.Errorf("auditlog: record %d does not have the hash its signed checkpoint holds; the log was altered, run agentauth audit verify", cp.Seq)
	}
	cut := Cut{Seq: cp.Seq, Hash: cp.Hash}
	if r.Archive {
		if err := d.chain.archive(r.ArchiveDir, old.Seq+1, cut.Seq); err != nil {
			return old, err
		}
	}
	if err := d.chain.writeCut(cut); err != nil {
		return old, err
	}
	d.mu.Lock()
	d.chain.cut = cut
	d.mu.Unlock()
	if err := d.removeThrough(ctx, cut.Seq); err != nil {
		return cut, err
	}
	d.log.Info("audit records past retention removed", zap.Int64("from_seq", old.Seq+1), zap.Int64("through_seq", cut.Seq), zap.Bool("archived", r.Archive))
	return cut, nil
}

// removeThrough deletes records up to seq from the index and the log
// segments that hold nothing newer.
func (d *Durable) removeThrough(ctx context.Context, seq int64) error {
	if err := d.index.DeleteAuditThrough(ctx, seq); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.chain.removeThrough(seq)
}

// runRetention applies r at start and every hour until Close.
func (d *Durable) runRetention(r Retention) {
	defer d.retainWG.Done()
	tick := time.NewTicker(time.Hour)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		if _, err := d.Retain(ctx, r, time.Now()); err != nil {
			d.log.Error("audit retention failed; retrying in an hour", zap.Error(err))
		}
		cancel()
		select {
		case <-tick.C:
		case <-d.closing:
			return
		}
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// writeFileSync replaces name with data durably (0600).
func writeFileSync(name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("auditlog: write %s: %w", name, err)
	}
	_, err = f.Write(data)
	if err = errors.Join(err, f.Sync(), f.Close()); err == nil {
		err = os.Rename(tmp, name)
	}
	if err == nil {
		err = auditarchive.SyncDir(filepath.Dir(name))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("auditlog: write %s: %w", name, err)
	}
	return nil
}
