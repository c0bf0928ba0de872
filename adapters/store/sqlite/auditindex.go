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
// entries: under load the index costs well under a microsecond a record.
//
// A block's entries are, per record in seq order: the time's change from
// the record before (zig-zag varint, Unix µs), the segment's change
// (uvarint), and the offset (uvarint): the change from the record before
// in the same segment, or the offset itself in a new one. A posting's seqs
// are the matching seqs' changes (uvarint), from the block's first seq.

// blockEntry is one record's time and place in the log.
type blockEntry struct {
	micros  int64
	segment uint64
	offset  int64
}

func appendBlockEntry(b []byte, prev, e blockEntry) []byte {
	b = binary.AppendVarint(b, e.micros-prev.micros)
	b = binary.AppendUvarint(b, e.segment-prev.segment)
	if e.segment == prev.segment {
		return binary.AppendUvarint(b, uint64(e.offset-prev.offset))
	}
	return binary.AppendUvarint(b, uint64(e.offset))
}

// decodeBlock returns the entries of a block of n records.
func decodeBlock(b []byte, n int) ([]blockEntry, error) {
	out := make([]blockEntry, 0, n)
	var prev blockEntry
	for len(b) > 0 {
		dt, k1 := binary.Varint(b)
		if k1 <= 0 {
			break
		}
		ds, k2 := binary.Uvarint(b[k1:])
		if k2 <= 0 {
			break
		}
		off, k3 := binary.Uvarint(b[k1+k2:])
		if k3 <= 0 {
			break
		}
		b = b[k1+k2+k3:]
		e := blockEntry{micros: prev.micros + dt, segment: prev.segment + ds, offset: int64(off)}
		if ds == 0 {
			e.offset += prev.offset
		}
		out, prev = append(out, e), e
	}
	if len(b) > 0 || len(out) != n {
		return nil, fmt.Errorf("sqlite: audit index block of %d records holds %d entries", n, len(out))
	}
	return out, nil
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
	key  string
	last int64
	seqs []byte
}

// encodeAuditBlock checks that records and their locations are one run of
// seqs in log order and encodes the block and its postings.
func encodeAuditBlock(records []domain.AuditRecord, at []ports.AuditLocation) ([]byte, []*posting, error) {
	if len(at) != len(records) {
		return nil, nil, fmt.Errorf("sqlite: %d audit records with %d locations", len(records), len(at))
	}
	first := records[0].Seq
	var (
		entries = make([]byte, 0, 6*len(records))
		prev    blockEntry
		byKey   = map[[2]string]*posting{}
		order   []*posting
	)
	add := func(r *domain.AuditRecord, subject string) {
		k := [2]string{string(r.Decision), subject}
		p := byKey[k]
		if p == nil {
			p = &posting{key: postingKey(r.Decision, subject), last: first}
			byKey[k] = p
			order = append(order, p)
		}
		p.seqs = binary.AppendUvarint(p.seqs, uint64(r.Seq-p.last))
		p.last = r.Seq
	}
	for i := range records {
		r := &records[i]
		if r.Seq != first+int64(i) || at[i].Seq != r.Seq {
			return nil, nil, fmt.Errorf("sqlite: audit records to index are not one run of seqs (record %d, location %d after %d)", r.Seq, at[i].Seq, first+int64(i)-1)
		}
		e := blockEntry{micros: r.Time.UnixMicro(), segment: at[i].Segment, offset: at[i].Offset}
		if i > 0 && (e.segment < prev.segment || e.segment == prev.segment && e.offset <= prev.offset) {
			return nil, nil, fmt.Errorf("sqlite: audit record %d is not after record %d in the log", r.Seq, r.Seq-1)
		}
		entries, prev = appendBlockEntry(entries, prev, e), e
		add(r, "")
		if r.Subject != "" {
			add(r, r.Subject)
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
	if _, err := tx.StmtContext(ctx, s.auditBlock).ExecContext(ctx, first, last, records[len(records)-1].Hash, entries); err != nil {
		return fmt.Errorf("sqlite: index audit records: %w", err)
	}
	insert := tx.StmtContext(ctx, s.auditPosting)
	for _, p := range postings {
		if _, err := insert.ExecContext(ctx, p.key, first, p.seqs); err != nil {
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

// FindAudit returns where the records matching q are, newest first: the
// time range becomes a seq range by binary search over the blocks
// (auditplan), a filter reads its postings newest first and stops at the
// page size, so a request reads a bounded number of rows however large
// the index.
func (s *Store) FindAudit(ctx context.Context, q ports.AuditQuery) ([]ports.AuditLocation, error) {
	first, last, ok, err := s.auditIndexBounds(ctx)
	if err != nil || !ok {
		return []ports.AuditLocation{}, err
	}
	blocks := &blockFinder{s: s}
	rng, err := auditplan.SeqRange(ctx, q, first, last, blocks.probe)
	if err != nil || rng.Empty {
		return []ports.AuditLocation{}, err
	}
	var seqs []int64
	if q.Subject == "" && q.Decision == "" {
		// The index holds every seq from first to last.
		n := rng.Hi - rng.Lo
		if q.Limit > 0 {
			n = min(n, int64(q.Limit))
		}
		for seq := rng.Hi - 1; seq >= rng.Hi-n; seq-- {
			seqs = append(seqs, seq)
		}
	} else {
		for _, br := range auditplan.Branches(q) {
			if seqs, err = s.appendPostingSeqs(ctx, seqs, postingKey(br.Decision, br.Subject), rng, q.Limit); err != nil {
				return nil, err
			}
		}
		slices.SortFunc(seqs, func(a, b int64) int { return cmp.Compare(b, a) })
		if q.Limit > 0 && len(seqs) > q.Limit {
			seqs = seqs[:q.Limit]
		}
	}
	return blocks.locate(ctx, seqs)
}

// appendPostingSeqs appends the seqs in rng filed under key, newest first,
// at most limit (0: all).
func (s *Store) appendPostingSeqs(ctx context.Context, out []int64, key string, rng auditplan.Range, limit int) ([]int64, error) {
	rows, err := s.queryRows(ctx, `SELECT first_seq, seqs FROM audit_posting WHERE key = ? AND first_seq < ? ORDER BY first_seq DESC`, key, rng.Hi)
	if err != nil {
		return nil, fmt.Errorf("sqlite: audit postings: %w", err)
	}
	defer rows.Close()
	var (
		found int
		block []int64
	)
	for rows.Next() {
		var (
			first int64
			enc   []byte
		)
		if err := rows.Scan(&first, &enc); err != nil {
			return nil, fmt.Errorf("sqlite: audit postings: %w", err)
		}
		block = block[:0]
		for seq := first; len(enc) > 0; {
			d, k := binary.Uvarint(enc)
			if k <= 0 {
				return nil, fmt.Errorf("sqlite: audit posting %q of block %d is damaged", key, first)
			}
			enc, seq = enc[k:], seq+int64(d)
			if seq >= rng.Lo && seq < rng.Hi {
				block = append(block, seq)
			}
		}
		for i := len(block) - 1; i >= 0; i-- {
			if out, found = append(out, block[i]), found+1; limit > 0 && found == limit {
				return out, nil
			}
		}
		if first <= rng.Lo {
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
	n := last - from + 1
	if limit > 0 {
		n = min(n, int64(limit))
	}
	seqs := make([]int64, n)
	for i := range seqs {
		seqs[i] = from + int64(i)
	}
	return (&blockFinder{s: s}).locate(ctx, seqs)
}

// blockFinder reads the blocks one query needs, each once.
type blockFinder struct {
	s      *Store
	blocks []indexBlock
}

type indexBlock struct {
	first, last int64
	entries     []blockEntry
}

// find returns the block holding seq or, when none does, the first block
// after it (ok false when there is none).
func (f *blockFinder) find(ctx context.Context, seq int64) (indexBlock, bool, error) {
	for _, b := range f.blocks {
		if b.first <= seq && seq <= b.last {
			return b, true, nil
		}
	}
	var (
		b   indexBlock
		enc []byte
	)
	err := f.s.queryRow(ctx, `SELECT first_seq, last_seq, entries FROM audit_block WHERE first_seq <= ? ORDER BY first_seq DESC LIMIT 1`, seq).Scan(&b.first, &b.last, &enc)
	if errors.Is(err, sql.ErrNoRows) || err == nil && b.last < seq {
		err = f.s.queryRow(ctx, `SELECT first_seq, last_seq, entries FROM audit_block WHERE first_seq > ? ORDER BY first_seq LIMIT 1`, seq).Scan(&b.first, &b.last, &enc)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return b, false, nil
	}
	if err != nil {
		return b, false, fmt.Errorf("sqlite: audit index block: %w", err)
	}
	if b.entries, err = decodeBlock(enc, int(b.last-b.first+1)); err != nil {
		return b, false, err
	}
	f.blocks = append(f.blocks, b)
	return b, true, nil
}

// probe is auditplan's: the first record at or after seq, and its time.
func (f *blockFinder) probe(ctx context.Context, seq int64) (int64, int64, bool, error) {
	b, ok, err := f.find(ctx, seq)
	if err != nil || !ok {
		return 0, 0, false, err
	}
	seq = max(seq, b.first)
	return seq, b.entries[seq-b.first].micros, true, nil
}

// locate returns the locations of seqs, each of which the index holds.
func (f *blockFinder) locate(ctx context.Context, seqs []int64) ([]ports.AuditLocation, error) {
	out := make([]ports.AuditLocation, 0, len(seqs))
	for _, seq := range seqs {
		b, ok, err := f.find(ctx, seq)
		if err != nil {
			return nil, err
		}
		if !ok || seq < b.first {
			return nil, fmt.Errorf("sqlite: audit record %d is missing from the index", seq)
		}
		e := b.entries[seq-b.first]
		out = append(out, ports.AuditLocation{Seq: seq, Segment: e.segment, Offset: e.offset})
	}
	return out, nil
}
