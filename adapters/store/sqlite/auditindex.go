package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/auditplan"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// The index of the audit log in SQLite mode (migration 0010): the log
// (adapters/auditlog) holds the records, this database where each one is
// and which match a filter, a block per indexed batch. Writing a batch of
// n records costs one block row and one posting row per distinct
// decision and (decision, subject) in it, instead of n rows and 2n index
// entries.
//
// A block's entries are, per record in seq order: the time's change from
// the record before (zig-zag varint, Unix µs) and the record's place. A
// posting's entries are, per matching record: the seq's change (uvarint,
// from the block's first seq) and the place. A place is the segment's
// change (uvarint) and the offset: its change from the entry before in the
// same segment, or the offset itself in a new one (uvarint). So a filter
// reads its postings alone, and a time or a page of the chain one block.

// place is where a record is in the log.
type place struct {
	segment uint64
	offset  int64
}

func appendPlace(b []byte, prev, p place) []byte {
	b = binary.AppendUvarint(b, p.segment-prev.segment)
	if p.segment == prev.segment {
		return binary.AppendUvarint(b, uint64(p.offset-prev.offset))
	}
	return binary.AppendUvarint(b, uint64(p.offset))
}

// readPlace decodes the place after prev at the start of b; n ≤ 0 when b
// does not hold one.
func readPlace(b []byte, prev place) (p place, n int) {
	ds, k1 := binary.Uvarint(b)
	if k1 <= 0 {
		return prev, -1
	}
	off, k2 := binary.Uvarint(b[k1:])
	if k2 <= 0 {
		return prev, -1
	}
	p = place{segment: prev.segment + ds, offset: int64(off)}
	if ds == 0 {
		p.offset += prev.offset
	}
	return p, k1 + k2
}

// walkBlock calls fn for each entry of the block starting at seq first,
// in order, until fn returns false.
func walkBlock(b []byte, first int64, fn func(seq, micros int64, p place) bool) error {
	var (
		micros int64
		p      place
	)
	for seq := first; len(b) > 0; seq++ {
		dt, k := binary.Varint(b)
		if k <= 0 {
			return fmt.Errorf("sqlite: audit index block %d is damaged at record %d", first, seq)
		}
		var n int
		if p, n = readPlace(b[k:], p); n <= 0 {
			return fmt.Errorf("sqlite: audit index block %d is damaged at record %d", first, seq)
		}
		b, micros = b[k+n:], micros+dt
		if !fn(seq, micros, p) {
			return nil
		}
	}
	return nil
}

// walkPosting calls fn for each entry of the posting of the block starting
// at seq first, in order.
func walkPosting(b []byte, first int64, fn func(seq int64, p place)) error {
	var p place
	for seq := first; len(b) > 0; {
		d, k := binary.Uvarint(b)
		if k <= 0 {
			return fmt.Errorf("sqlite: audit index posting of block %d is damaged", first)
		}
		var n int
		if p, n = readPlace(b[k:], p); n <= 0 {
			return fmt.Errorf("sqlite: audit index posting of block %d is damaged", first)
		}
		b, seq = b[k+n:], seq+int64(d)
		fn(seq, p)
	}
	return nil
}

// postingKey is what a posting row is found by: the decision, or the
// decision and the subject (subject last: it may hold any text).
func postingKey(decision domain.AuditDecision, subject string) string {
	if subject == "" {
		return "d\x00" + string(decision)
	}
	return "s\x00" + string(decision) + "\x00" + subject
}

type posting struct {
	key     string
	last    int64
	at      place
	entries []byte
}

// encodeAuditBlock checks that records and their locations are one run of
// seqs in log order and encodes the block and its postings.
func encodeAuditBlock(records []domain.AuditRecord, at []ports.AuditLocation) ([]byte, []*posting, error) {
	if len(at) != len(records) {
		return nil, nil, fmt.Errorf("sqlite: %d audit records with %d locations", len(records), len(at))
	}
	first := records[0].Seq
	var (
		entries    = make([]byte, 0, 6*len(records))
		prev       place
		prevMicros int64
		byKey      = map[[2]string]*posting{}
		order      []*posting
	)
	add := func(r *domain.AuditRecord, subject string, at place) {
		k := [2]string{string(r.Decision), subject}
		p := byKey[k]
		if p == nil {
			p = &posting{key: postingKey(r.Decision, subject), last: first}
			byKey[k] = p
			order = append(order, p)
		}
		p.entries = binary.AppendUvarint(p.entries, uint64(r.Seq-p.last))
		p.entries = appendPlace(p.entries, p.at, at)
		p.last, p.at = r.Seq, at
	}
	for i := range records {
		r := &records[i]
		if r.Seq != first+int64(i) || at[i].Seq != r.Seq {
			return nil, nil, fmt.Errorf("sqlite: audit records to index are not one run of seqs (record %d, location %d after %d)", r.Seq, at[i].Seq, first+int64(i)-1)
		}
		p, micros := place{segment: at[i].Segment, offset: at[i].Offset}, r.Time.UnixMicro()
		if i > 0 && (p.segment < prev.segment || p.segment == prev.segment && p.offset <= prev.offset) {
			return nil, nil, fmt.Errorf("sqlite: audit record %d is not after record %d in the log", r.Seq, r.Seq-1)
		}
		entries = binary.AppendVarint(entries, micros-prevMicros)
		entries = appendPlace(entries, prev, p)
		prev, prevMicros = p, micros
		add(r, "", p)
		if r.Subject != "" {
			add(r, r.Subject, p)
		}
	}
	return entries, order, nil
}

// IndexAudit indexes records sealed and written by the audit log at the
// given locations: one run of seqs right after the indexed ones (or the
// first after ClearAuditIndex). The log is the durable copy, so this
// transaction does not wait for the disk (synchronous=NORMAL: a crash may
// lose it, and the log replays it at the next start). It settles the
// records' audit intents.
func (s *Store) IndexAudit(ctx context.Context, records []domain.AuditRecord, at []ports.AuditLocation) error {
	if len(records) == 0 {
		return nil
	}
	entries, postings, err := encodeAuditBlock(records, at)
	if err != nil {
		return err
	}
	conn, err := s.write.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: audit index connection: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = NORMAL`); err != nil {
		return fmt.Errorf("sqlite: audit index: %w", err)
	}
	// Every other write on this connection keeps waiting for the disk.
	defer func() {
		if _, err := conn.ExecContext(context.Background(), `PRAGMA synchronous = FULL`); err != nil {
			s.log.Error("restore synchronous=FULL on the write connection", zap.Error(err))
			conn.Raw(func(any) error { return driver.ErrBadConn }) // never reuse it
		}
	}()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin audit index: %w", err)
	}
	defer tx.Rollback()
	var head int64
	err = tx.QueryRowContext(ctx, `SELECT last_seq FROM audit_block ORDER BY first_seq DESC LIMIT 1`).Scan(&head)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: audit index head: %w", err)
	}
	first, last := records[0].Seq, records[len(records)-1].Seq
	if head > 0 && first != head+1 {
		return fmt.Errorf("sqlite: audit records %d to %d do not follow the index, which ends at %d", first, last, head)
	}
	if _, err := tx.StmtContext(ctx, s.auditBlock).ExecContext(ctx, first, last, records[0].Time.UnixMicro(), records[len(records)-1].Hash, entries); err != nil {
		return fmt.Errorf("sqlite: index audit records: %w", err)
	}
	insert := tx.StmtContext(ctx, s.auditPosting)
	for _, p := range postings {
		if _, err := insert.ExecContext(ctx, p.key, first, p.entries); err != nil {
			return fmt.Errorf("sqlite: index audit records: %w", err)
		}
	}
	// A crash may lose this transaction, and with it the settling: the
	// replay of the log at start settles the intents again.
	if err := settleIntents(ctx, tx, records); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit audit index: %w", err)
	}
	return nil
}

// AuditIndexHead is the newest indexed record's seq and hash (0, "" when
// none).
func (s *Store) AuditIndexHead(ctx context.Context) (int64, string, error) {
	var (
		seq  int64
		hash string
	)
	err := s.write.QueryRowContext(ctx, `SELECT last_seq, last_hash FROM audit_block ORDER BY first_seq DESC LIMIT 1`).Scan(&seq, &hash)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, "", fmt.Errorf("sqlite: read audit index head: %w", err)
	}
	return seq, hash, nil
}

// DeleteAuditThrough removes records up to seq from the index
// (retention): queries stop seeing them at once, and blocks and postings
// that hold nothing newer are deleted, a bounded number per transaction
// so that indexing is never held up long.
func (s *Store) DeleteAuditThrough(ctx context.Context, seq int64) error {
	if _, err := s.write.ExecContext(ctx, `INSERT INTO audit_index_start (id, seq) VALUES (1, ?)
		ON CONFLICT (id) DO UPDATE SET seq = max(seq, excluded.seq)`, seq); err != nil {
		return fmt.Errorf("sqlite: audit index start: %w", err)
	}
	// The block holding seq+1, if any, stays: it holds kept records too.
	keep := seq + 1
	err := s.write.QueryRowContext(ctx, `SELECT first_seq FROM audit_block WHERE first_seq <= ? ORDER BY first_seq DESC LIMIT 1`, seq+1).Scan(&keep)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: delete audit index blocks: %w", err)
	}
	for _, stmt := range []string{
		`DELETE FROM audit_posting WHERE (key, first_seq) IN (SELECT key, first_seq FROM audit_posting WHERE first_seq < ? LIMIT 10000)`,
		`DELETE FROM audit_block WHERE first_seq IN (SELECT first_seq FROM audit_block WHERE first_seq < ? ORDER BY first_seq LIMIT 10000)`,
	} {
		for {
			res, err := s.write.ExecContext(ctx, stmt, keep)
			if err != nil {
				return fmt.Errorf("sqlite: delete audit index entries: %w", err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				break
			}
		}
	}
	return nil
}

// ClearAuditIndex deletes the whole index, for a rebuild from the log.
func (s *Store) ClearAuditIndex(ctx context.Context) error {
	if _, err := s.write.ExecContext(ctx, `DELETE FROM audit_block; DELETE FROM audit_posting; DELETE FROM audit_index_start`); err != nil {
		return fmt.Errorf("sqlite: clear audit index: %w", err)
	}
	return nil
}

// ClearAuditTable deletes the records of the audit table, which the audit
// log has taken over (a database from before the log kept them there).
func (s *Store) ClearAuditTable(ctx context.Context) error {
	if _, err := s.write.ExecContext(ctx, `DELETE FROM audit`); err != nil {
		return fmt.Errorf("sqlite: clear the audit table: %w", err)
	}
	return nil
}

// auditIndexBounds are the first and last indexed seqs kept; ok is false
// when none.
func (s *Store) auditIndexBounds(ctx context.Context) (first, last int64, ok bool, err error) {
	var lo, hi, start sql.NullInt64
	err = s.queryRow(ctx, `SELECT (SELECT min(first_seq) FROM audit_block),
		(SELECT last_seq FROM audit_block ORDER BY first_seq DESC LIMIT 1),
		(SELECT seq FROM audit_index_start WHERE id = 1)`).Scan(&lo, &hi, &start)
	if err != nil {
		return 0, 0, false, fmt.Errorf("sqlite: audit index bounds: %w", err)
	}
	first = max(lo.Int64, start.Int64+1)
	return first, hi.Int64, hi.Valid && first <= hi.Int64, nil
}

// FindAudit returns where the records matching q are, newest first: a
// time becomes a seq through the index of block times and one block, a
// filter reads its postings newest first and stops at the page size, so a
// request reads a bounded number of rows however large the index.
func (s *Store) FindAudit(ctx context.Context, q ports.AuditQuery) ([]ports.AuditLocation, error) {
	first, last, ok, err := s.auditIndexBounds(ctx)
	if err != nil || !ok {
		return []ports.AuditLocation{}, err
	}
	lo, hi := first, last+1
	if q.Before > 0 {
		hi = min(hi, q.Before)
	}
	if !q.Since.IsZero() && lo < hi {
		seq, err := s.firstAuditAtOrAfter(ctx, q.Since.UnixMicro())
		if err != nil {
			return nil, err
		}
		lo = max(lo, seq)
	}
	if !q.Until.IsZero() && lo < hi {
		seq, err := s.firstAuditAtOrAfter(ctx, q.Until.UnixMicro())
		if err != nil {
			return nil, err
		}
		hi = min(hi, seq)
	}
	if lo >= hi {
		return []ports.AuditLocation{}, nil
	}
	if q.Subject == "" && q.Decision == "" {
		// The index holds every seq from first to last.
		n := hi - lo
		if q.Limit > 0 {
			n = min(n, int64(q.Limit))
		}
		out, err := s.locateAudit(ctx, hi-n, hi-1)
		slices.Reverse(out)
		return out, err
	}
	var out []ports.AuditLocation
	for _, br := range auditplan.Branches(q) {
		if out, err = s.appendPosting(ctx, out, postingKey(br.Decision, br.Subject), lo, hi, q.Limit); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b ports.AuditLocation) int { return cmp.Compare(b.Seq, a.Seq) })
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// firstAuditAtOrAfter is the first indexed seq whose time is at least
// micros, the seq after the last when none is, 0 when every record is.
// Time never decreases along the chain, so it is in the last block that
// starts before micros, or starts the block after it.
func (s *Store) firstAuditAtOrAfter(ctx context.Context, micros int64) (int64, error) {
	var (
		first, last int64
		entries     []byte
	)
	err := s.queryRow(ctx, `SELECT first_seq, last_seq, entries FROM audit_block INDEXED BY audit_block_time
		WHERE first_time < ? ORDER BY first_time DESC, first_seq DESC LIMIT 1`, micros).Scan(&first, &last, &entries)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlite: audit index block by time: %w", err)
	}
	found := last + 1
	err = walkBlock(entries, first, func(seq, t int64, _ place) bool {
		if t >= micros {
			found = seq
			return false
		}
		return true
	})
	return found, err
}

// appendPosting appends where the records filed under key with seqs in
// [lo, hi) are, newest first, at most limit (0: all).
func (s *Store) appendPosting(ctx context.Context, out []ports.AuditLocation, key string, lo, hi int64, limit int) ([]ports.AuditLocation, error) {
	rows, err := s.queryRows(ctx, `SELECT first_seq, entries FROM audit_posting WHERE key = ? AND first_seq < ? ORDER BY first_seq DESC`, key, hi)
	if err != nil {
		return nil, fmt.Errorf("sqlite: audit postings: %w", err)
	}
	defer rows.Close()
	var (
		found int
		block []ports.AuditLocation
	)
	for rows.Next() {
		var (
			first   int64
			entries []byte
		)
		if err := rows.Scan(&first, &entries); err != nil {
			return nil, fmt.Errorf("sqlite: audit postings: %w", err)
		}
		block = block[:0]
		err := walkPosting(entries, first, func(seq int64, p place) {
			if seq >= lo && seq < hi {
				block = append(block, ports.AuditLocation{Seq: seq, Segment: p.segment, Offset: p.offset})
			}
		})
		if err != nil {
			return nil, err
		}
		for i := len(block) - 1; i >= 0; i-- {
			if out, found = append(out, block[i]), found+1; limit > 0 && found == limit {
				return out, nil
			}
		}
		if first <= lo {
			break // older blocks hold only older seqs
		}
	}
	return out, rows.Err()
}

// LocateAudit returns where the records after seq are, in order, at most
// limit (0: all).
func (s *Store) LocateAudit(ctx context.Context, after int64, limit int) ([]ports.AuditLocation, error) {
	first, last, ok, err := s.auditIndexBounds(ctx)
	from := max(after+1, first)
	if err != nil || !ok || from > last {
		return []ports.AuditLocation{}, err
	}
	to := last
	if limit > 0 {
		to = min(to, from+int64(limit)-1)
	}
	return s.locateAudit(ctx, from, to)
}

// locateAudit returns where records from..to are, in order, reading the
// blocks that hold them.
func (s *Store) locateAudit(ctx context.Context, from, to int64) ([]ports.AuditLocation, error) {
	rows, err := s.queryRows(ctx, `SELECT first_seq, entries FROM audit_block
		WHERE first_seq >= coalesce((SELECT first_seq FROM audit_block WHERE first_seq <= ? ORDER BY first_seq DESC LIMIT 1), ?)
		AND first_seq <= ? ORDER BY first_seq`, from, from, to)
	if err != nil {
		return nil, fmt.Errorf("sqlite: audit index blocks: %w", err)
	}
	defer rows.Close()
	out := make([]ports.AuditLocation, 0, to-from+1)
	for rows.Next() {
		var (
			first   int64
			entries []byte
		)
		if err := rows.Scan(&first, &entries); err != nil {
			return nil, fmt.Errorf("sqlite: audit index blocks: %w", err)
		}
		err := walkBlock(entries, first, func(seq, _ int64, p place) bool {
			if seq >= from {
				out = append(out, ports.AuditLocation{Seq: seq, Segment: p.segment, Offset: p.offset})
			}
			return seq < to
		})
		if err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: audit index blocks: %w", err)
	}
	if int64(len(out)) != to-from+1 {
		return nil, fmt.Errorf("sqlite: audit records %d to %d are not all in the index", from, to)
	}
	return out, nil
}
