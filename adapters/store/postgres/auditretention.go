package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditarchive"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

var _ ports.AuditChainStarter = (*Store)(nil)

// AuditRetention is how records past retention leave the audit log.
type AuditRetention struct {
	// Keep is how long records are kept (more than zero).
	Keep time.Duration
	// ArchiveDir receives the records removed (adapters/auditarchive)
	// before they are deleted; "" drops them (they were exported).
	ArchiveDir string
	// Chunk bounds the records one cut removes (one archive file each;
	// 0: defaultRetentionChunk), so that a long backlog is removed in
	// steps that each survive the run being stopped.
	Chunk int64
}

// defaultRetentionChunk is a cut's size unless AuditRetention says.
const defaultRetentionChunk = 1_000_000

// Retained is what one RetainAudit did.
type Retained struct {
	// Skipped: another instance holds the retention lock; nothing was done.
	Skipped bool
	// Cut is where the chain kept starts after the run (Genesis when
	// nothing was ever removed).
	Cut domain.ChainStart
	// Removed counts the records this run deleted; Archives are the
	// files it wrote, oldest first.
	Removed  int64
	Archives []string
}

// retentionLock is the session advisory lock one instance holds while it
// applies retention; the key includes the schema, like the migration lock.
const retentionLock = `hashtext('agentauth.audit_retention.' || current_schema())`

// retentionBatch is how many sequence numbers one DELETE covers: each is
// its own short transaction, so appends, which lock only the chain head,
// never wait for a long one.
const retentionBatch = 10_000

// ChainStart is where verification of the records kept begins: the first
// record, or the record after the retention cut.
func (s *Store) ChainStart(ctx context.Context) (domain.ChainStart, error) {
	cut, err := readCut(ctx, s.pool)
	if err != nil {
		return domain.ChainStart{}, storeErr("read the audit retention cut", err)
	}
	return cut, nil
}

func readCut(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (domain.ChainStart, error) {
	var (
		seq  int64
		hash string
	)
	err := q.QueryRow(ctx, `SELECT seq, hash FROM audit_cut WHERE id = 1`).Scan(&seq, &hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Genesis, nil
	}
	if err != nil {
		return domain.ChainStart{}, err
	}
	return domain.ChainStart{Next: seq + 1, Prev: hash}, nil
}

// RetainAudit removes the records older than now minus r.Keep, up to the
// newest signed checkpoint among them, so that the chain kept starts right
// after a signed checkpoint; a backlog longer than r.Chunk is cut in
// several steps, at checkpoints in between. Only one instance at a time does it: the one
// that takes the retention lock; the others skip (Skipped). In order: the
// records are archived (unless r.ArchiveDir is ""), synced; the cut is
// committed (audit_cut); then the records up to it are deleted in batches.
// A run interrupted anywhere loses nothing: before the cut is committed
// the records are all there (and a rerun writes the archive again), after
// it the next run deletes what is left. Appends go on meanwhile.
func (s *Store) RetainAudit(ctx context.Context, r AuditRetention, now time.Time) (Retained, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return Retained{}, storeErr("audit retention", err)
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+retentionLock+`)`).Scan(&locked); err != nil {
		return Retained{}, storeErr("audit retention lock", err)
	}
	if !locked {
		return Retained{Skipped: true}, nil
	}
	defer func() {
		// A fresh context: the lock must be released even if ctx ended.
		if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_unlock(`+retentionLock+`)`); err != nil {
			s.log.Warn("release the audit retention lock; it goes with the connection", zap.Error(err))
			conn.Conn().Close(context.Background())
		}
	}()
	// The cut and the deletions go through the connection holding the
	// lock: if it is lost (the connection broke), they fail instead of
	// racing another instance.
	out, err := s.retain(ctx, conn, r, now)
	if err != nil {
		return out, fmt.Errorf("postgres: audit retention: %w", err)
	}
	return out, nil
}

func (s *Store) retain(ctx context.Context, conn *pgxpool.Conn, r AuditRetention, now time.Time) (Retained, error) {
	cut, err := readCut(ctx, conn)
	if err != nil {
		return Retained{}, err
	}
	out := Retained{Cut: cut}
	// What an interrupted run left.
	if out.Removed, err = deleteThrough(ctx, conn, cut.Next-1); err != nil {
		return out, err
	}
	older, err := s.QueryAudit(ctx, ports.AuditQuery{Until: now.Add(-r.Keep), Limit: 1})
	if err != nil || len(older) == 0 {
		return out, err
	}
	for {
		cp, ok, err := s.nextCut(ctx, out.Cut.Next-1, older[0].Seq, cmp.Or(r.Chunk, defaultRetentionChunk))
		if err != nil || !ok {
			return out, err
		}
		if err := s.cutAt(ctx, conn, r.ArchiveDir, cp, now, &out); err != nil {
			return out, err
		}
	}
}

// nextCut is the checkpoint the next cut after record after is made at:
// the newest with seq at most through and at most chunk records past
// after, else (checkpoints further apart than chunk) the oldest with seq
// at most through.
func (s *Store) nextCut(ctx context.Context, after, through, chunk int64) (domain.AuditCheckpoint, bool, error) {
	cps, err := queryCheckpoints(ctx, s.pool, `SELECT `+checkpointColumns+` FROM (
		(SELECT 0 AS pick, `+checkpointColumns+` FROM audit_checkpoint WHERE seq > $1 AND seq <= LEAST($2, $1 + $3) ORDER BY seq DESC LIMIT 1)
		UNION ALL
		(SELECT 1 AS pick, `+checkpointColumns+` FROM audit_checkpoint WHERE seq > $1 AND seq <= $2 ORDER BY seq LIMIT 1)) c
		ORDER BY pick LIMIT 1`, after, through, chunk)
	if err != nil {
		return domain.AuditCheckpoint{}, false, storeErr("query checkpoints", err)
	}
	if len(cps) == 0 {
		return domain.AuditCheckpoint{}, false, nil
	}
	return cps[0], true, nil
}

// cutAt removes the records from out.Cut up to checkpoint cp: archived
// into dir (unless ""), the cut committed, then deleted.
func (s *Store) cutAt(ctx context.Context, conn *pgxpool.Conn, dir string, cp domain.AuditCheckpoint, now time.Time, out *Retained) error {
	at, err := s.AuditChain(ctx, cp.Seq-1, 1)
	if err != nil {
		return err
	}
	if len(at) != 1 || at[0].Seq != cp.Seq || at[0].Hash != cp.Hash {
		return fmt.Errorf("record %d is missing or does not have the hash its signed checkpoint holds; the log was altered, run agentauth audit verify", cp.Seq)
	}
	from, archive := out.Cut.Next, ""
	if dir != "" {
		if archive, err = auditarchive.Write(dir, from, cp.Seq, s.auditRange(ctx, from, cp.Seq)); err != nil {
			return err
		}
		out.Archives = append(out.Archives, archive)
	}
	host, _ := os.Hostname()
	// Durable before anything is deleted; the cut only moves forward.
	if _, err := conn.Exec(ctx, `INSERT INTO audit_cut (id, seq, hash, at, host, archive) VALUES (1, $1, $2, $3, $4, $5)
		ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash, at = EXCLUDED.at, host = EXCLUDED.host, archive = EXCLUDED.archive
		WHERE audit_cut.seq < EXCLUDED.seq`, cp.Seq, cp.Hash, now.UnixMicro(), host, archive); err != nil {
		return fmt.Errorf("record the cut: %w", err)
	}
	out.Cut = domain.ChainStart{Next: cp.Seq + 1, Prev: cp.Hash}
	n, err := deleteThrough(ctx, conn, cp.Seq)
	out.Removed += n
	if err != nil {
		return err
	}
	s.log.Info("audit records past retention removed", zap.Int64("from_seq", from), zap.Int64("through_seq", cp.Seq),
		zap.Int64("removed", n), zap.String("archive", archive), zap.String("host", host))
	return nil
}

// auditRange emits records from..through in order, page by page, and
// stops early when emit says so.
func (s *Store) auditRange(ctx context.Context, from, through int64) auditarchive.Records {
	return func(emit func(domain.AuditRecord) error) error {
		for after := from - 1; after < through; {
			recs, err := s.AuditChain(ctx, after, int(min(1000, through-after)))
			if err != nil || len(recs) == 0 {
				return err // a short range is reported by the archive
			}
			for _, r := range recs {
				if err := emit(r); err != nil {
					return err
				}
			}
			after = recs[len(recs)-1].Seq
		}
		return nil
	}
}

// deleteThrough deletes the records up to seq, retentionBatch sequence
// numbers per statement, and returns how many it deleted.
func deleteThrough(ctx context.Context, conn *pgxpool.Conn, seq int64) (int64, error) {
	var first *int64
	if err := conn.QueryRow(ctx, `SELECT min(seq) FROM audit`).Scan(&first); err != nil {
		return 0, err
	}
	var n int64
	if first == nil {
		return 0, nil
	}
	for lo := *first; lo <= seq; lo += retentionBatch {
		tag, err := conn.Exec(ctx, `DELETE FROM audit WHERE seq >= $1 AND seq < $2`, lo, min(lo+retentionBatch, seq+1))
		if err != nil {
			return n, fmt.Errorf("delete records %d to %d: %w", lo, seq, err)
		}
		n += tag.RowsAffected()
	}
	return n, nil
}

// RunAuditRetention applies r at start and every hour until the returned
// stop is called (which waits for a run under way).
func (s *Store) RunAuditRetention(r AuditRetention) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Hour)
		defer tick.Stop()
		for {
			run, cancelRun := context.WithTimeout(ctx, 30*time.Minute)
			if _, err := s.RetainAudit(run, r, time.Now()); err != nil && ctx.Err() == nil {
				s.log.Error("audit retention failed; retrying in an hour", zap.Error(err))
			}
			cancelRun()
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}
