package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentauth/agentauth/adapters/store/auditplan"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// AppendAudit writes records in one transaction, extending the hash chain.
// In SQLite mode the service appends through the audit log
// (adapters/auditlog) and this store is only its index (auditindex.go);
// this table serves tests that use the store alone, and holds the records
// of a database from before the log until they are copied into it. Either way the
// transaction that stores records settles their requests' audit intents.
func (s *Store) AppendAudit(ctx context.Context, records []domain.AuditRecord) error {
	if len(records) == 0 {
		return nil
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin audit append: %w", err)
	}
	defer tx.Rollback()
	var (
		seq, last int64
		prev      = domain.GenesisHash
	)
	err = tx.QueryRowContext(ctx, `SELECT seq, hash, time FROM audit ORDER BY seq DESC LIMIT 1`).Scan(&seq, &prev, &last)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: read audit chain head: %w", err)
	}
	for i := range records {
		seq++
		records[i].NotBefore(time.UnixMicro(last))
		records[i].Seal(seq, prev)
		prev, last = records[i].Hash, records[i].Time.UnixMicro()
	}
	if err := s.insertAudit(ctx, tx, records); err != nil {
		return err
	}
	if err := settleIntents(ctx, tx, records); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit audit records: %w", err)
	}
	return nil
}

// insertAudit writes sealed records with the prepared INSERT of
// auditChunk rows, then the one-row INSERT for the rest: a statement per
// row or compiled per batch costs more than the rows themselves (modernc
// keeps prepared statements compiled).
func (s *Store) insertAudit(ctx context.Context, tx *sql.Tx, records []domain.AuditRecord) error {
	chunk, one := tx.StmtContext(ctx, s.auditChunk), tx.StmtContext(ctx, s.auditOne)
	defer chunk.Close()
	defer one.Close()
	args := make([]any, 0, min(len(records), auditChunk)*auditFields)
	for start := 0; start < len(records); {
		n, stmt := auditChunk, chunk
		if len(records)-start < auditChunk {
			n, stmt = 1, one
		}
		args = args[:0]
		for i := range records[start : start+n] {
			r := &records[start+i]
			// Sealed text is valid UTF-8 without control characters, so
			// JSON keeps it byte for byte.
			body, err := json.Marshal(auditBody{RequestID: r.RequestID, Roles: domain.JoinRoles(r.Roles), AuthMethod: string(r.AuthMethod),
				Method: r.Method, Path: r.Path, Client: r.Client, Reason: r.Reason, Status: r.Status, PrevHash: r.PrevHash})
			if err != nil {
				return fmt.Errorf("sqlite: encode audit record: %w", err)
			}
			args = append(args, r.Seq, r.Version, r.Time.UnixMicro(), r.Subject, string(r.Decision), r.Hash, string(body))
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("sqlite: insert audit records: %w", err)
		}
		start += n
	}
	return nil
}

// prepareAudit prepares the INSERTs of the audit table and index on the
// write connection.
func (s *Store) prepareAudit(ctx context.Context) error {
	var err error
	if s.auditChunk, err = s.write.PrepareContext(ctx, insertAuditRows(auditChunk)); err != nil {
		return fmt.Errorf("sqlite: prepare audit insert: %w", err)
	}
	if s.auditOne, err = s.write.PrepareContext(ctx, insertAuditRows(1)); err != nil {
		return fmt.Errorf("sqlite: prepare audit insert: %w", err)
	}
	if s.auditBlock, err = s.write.PrepareContext(ctx, `INSERT INTO audit_block (first_seq, last_seq, first_time, last_hash, entries) VALUES (?, ?, ?, ?, ?)`); err != nil {
		return fmt.Errorf("sqlite: prepare audit index insert: %w", err)
	}
	if s.auditPosting, err = s.write.PrepareContext(ctx, `INSERT INTO audit_posting (key, first_seq, entries) VALUES (?, ?, ?)`); err != nil {
		return fmt.Errorf("sqlite: prepare audit index insert: %w", err)
	}
	return nil
}

// auditFields is the number of columns an audit row has; auditChunk is
// the rows of the multi-row INSERT.
const (
	auditFields = 7
	auditChunk  = 32
)

// auditBody holds the fields of a record that no query filters on
// (migrations 0004, 0005).
type auditBody struct {
	RequestID  string `json:"request_id"`
	Roles      string `json:"roles"`
	AuthMethod string `json:"auth_method"`
	Method     string `json:"method"`
	Path       string `json:"path"`
	Client     string `json:"client,omitempty"`
	Reason     string `json:"reason"`
	Status     int    `json:"status"`
	PrevHash   string `json:"prev_hash"`
}

// insertAuditRows is the INSERT text for n rows.
func insertAuditRows(n int) string {
	row := "(" + strings.Repeat("?, ", auditFields-1) + "?)"
	return `INSERT INTO audit (` + auditColumns + `) VALUES ` + strings.Repeat(row+", ", n-1) + row
}

const auditColumns = `seq, version, time, subject, decision, hash, body`

// QueryAudit returns matching records, newest first, reading a bounded
// number of rows (adapters/store/auditplan).
func (s *Store) QueryAudit(ctx context.Context, q ports.AuditQuery) ([]domain.AuditRecord, error) {
	var first, last sql.NullInt64
	if err := s.read.QueryRowContext(ctx, `SELECT (SELECT min(seq) FROM audit), (SELECT max(seq) FROM audit)`).Scan(&first, &last); err != nil {
		return nil, fmt.Errorf("sqlite: audit bounds: %w", err)
	}
	if !last.Valid {
		return []domain.AuditRecord{}, nil
	}
	rng, err := auditplan.SeqRange(ctx, q, first.Int64, last.Int64, s.auditProbe)
	if err != nil || rng.Empty {
		return []domain.AuditRecord{}, err
	}
	var (
		selects []string
		args    []any
	)
	for _, br := range auditplan.Branches(q) {
		where, index := []string{"seq >= ?", "seq < ?"}, ""
		args = append(args, rng.Lo, rng.Hi)
		if br.Decision != "" {
			where, args, index = append(where, "decision = ?"), append(args, string(br.Decision)), " INDEXED BY audit_decision_seq"
		}
		if br.Subject != "" {
			where, args, index = append(where, "subject = ?"), append(args, br.Subject), " INDEXED BY audit_subject_decision_seq"
		}
		// Exact for records written before time was kept non-decreasing.
		if !q.Since.IsZero() {
			where, args = append(where, "time >= ?"), append(args, q.Since.UnixMicro())
		}
		if !q.Until.IsZero() {
			where, args = append(where, "time < ?"), append(args, q.Until.UnixMicro())
		}
		selects = append(selects, `SELECT `+auditColumns+` FROM audit`+index+` WHERE `+strings.Join(where, " AND ")+
			` ORDER BY seq DESC`+limitClause(q.Limit))
	}
	query := selects[0]
	if len(selects) > 1 {
		query = `SELECT * FROM (` + strings.Join(selects, `) UNION ALL SELECT * FROM (`) + `) ORDER BY seq DESC` + limitClause(q.Limit)
	}
	return s.queryAudit(ctx, query, args...)
}

// auditProbe is the first record at or after seq, for auditplan's search.
func (s *Store) auditProbe(ctx context.Context, seq int64) (int64, int64, bool, error) {
	var found, micros int64
	err := s.read.QueryRowContext(ctx, `SELECT seq, time FROM audit WHERE seq >= ? ORDER BY seq LIMIT 1`, seq).Scan(&found, &micros)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("sqlite: audit time probe: %w", err)
	}
	return found, micros, true, nil
}

// AuditChain returns records after seq in increasing order.
func (s *Store) AuditChain(ctx context.Context, after int64, limit int) ([]domain.AuditRecord, error) {
	return s.queryAudit(ctx, `SELECT `+auditColumns+` FROM audit WHERE seq > ? ORDER BY seq`+limitClause(limit), after)
}

func (s *Store) queryAudit(ctx context.Context, query string, args ...any) ([]domain.AuditRecord, error) {
	rows, err := s.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: query audit: %w", err)
	}
	defer rows.Close()
	out := []domain.AuditRecord{}
	for rows.Next() {
		var (
			r              domain.AuditRecord
			micros         int64
			decision, body string
			b              auditBody
		)
		if err := rows.Scan(&r.Seq, &r.Version, &micros, &r.Subject, &decision, &r.Hash, &body); err != nil {
			return nil, fmt.Errorf("sqlite: scan audit record: %w", err)
		}
		if err := json.Unmarshal([]byte(body), &b); err != nil {
			return nil, fmt.Errorf("sqlite: decode audit record %d: %w", r.Seq, err)
		}
		r.Time = time.UnixMicro(micros).UTC()
		r.Decision = domain.AuditDecision(decision)
		r.RequestID, r.Roles, r.AuthMethod = b.RequestID, domain.SplitRoles(b.Roles), domain.AuthMethod(b.AuthMethod)
		r.Method, r.Path, r.Client, r.Reason, r.Status, r.PrevHash = b.Method, b.Path, b.Client, b.Reason, b.Status, b.PrevHash
		out = append(out, r)
	}
	return out, rows.Err()
}
