package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// AppendAudit writes records in one transaction, extending the hash chain.
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
		seq  int64
		prev = domain.GenesisHash
	)
	err = tx.QueryRowContext(ctx, `SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1`).Scan(&seq, &prev)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: read audit chain head: %w", err)
	}
	// One multi-row INSERT per chunk: a statement per row would cost more
	// than the commit itself.
	args := make([]any, 0, min(len(records), auditChunk)*auditFields)
	for start := 0; start < len(records); start += auditChunk {
		chunk := records[start:min(start+auditChunk, len(records))]
		args = args[:0]
		for i := range chunk {
			r := &chunk[i]
			seq++
			r.Seal(seq, prev)
			prev = r.Hash
			// Sealed text is valid UTF-8 without control characters, so
			// JSON keeps it byte for byte.
			body, err := json.Marshal(auditBody{RequestID: r.RequestID, Roles: domain.JoinRoles(r.Roles), AuthMethod: string(r.AuthMethod),
				Method: r.Method, Path: r.Path, Client: r.Client, Reason: r.Reason, Status: r.Status, PrevHash: r.PrevHash})
			if err != nil {
				return fmt.Errorf("sqlite: encode audit record: %w", err)
			}
			args = append(args, r.Seq, r.Version, r.Time.UnixMicro(), r.Subject, string(r.Decision), r.Hash, string(body))
		}
		if _, err := tx.ExecContext(ctx, insertAudit(len(chunk)), args...); err != nil {
			return fmt.Errorf("sqlite: insert audit records: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit audit records: %w", err)
	}
	return nil
}

// auditFields is the number of columns an audit row has; auditChunk bounds
// the rows of one INSERT (SQLite allows 32766 parameters).
const (
	auditFields = 7
	auditChunk  = 256
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

// insertAudit is the INSERT text for n rows.
func insertAudit(n int) string {
	row := "(" + strings.Repeat("?, ", auditFields-1) + "?)"
	return `INSERT INTO audit (` + auditColumns + `) VALUES ` + strings.Repeat(row+", ", n-1) + row
}

const auditColumns = `seq, version, time, subject, decision, hash, body`

// QueryAudit returns matching records, newest first.
func (s *Store) QueryAudit(ctx context.Context, q ports.AuditQuery) ([]domain.AuditRecord, error) {
	var (
		where []string
		args  []any
	)
	if q.Subject != "" {
		where, args = append(where, "subject = ?"), append(args, q.Subject)
	}
	if q.Decision != "" {
		where, args = append(where, "decision = ?"), append(args, string(q.Decision))
	}
	if !q.Since.IsZero() {
		where, args = append(where, "time >= ?"), append(args, q.Since.UnixMicro())
	}
	if !q.Until.IsZero() {
		where, args = append(where, "time < ?"), append(args, q.Until.UnixMicro())
	}
	if q.Before > 0 {
		where, args = append(where, "seq < ?"), append(args, q.Before)
	}
	query := `SELECT ` + auditColumns + ` FROM audit`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	return s.queryAudit(ctx, query+` ORDER BY seq DESC`+limitClause(q.Limit), args...)
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
