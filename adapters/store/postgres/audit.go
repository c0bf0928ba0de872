package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentauth/agentauth/adapters/store/auditplan"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// AppendAudit writes records in one transaction, extending the hash chain,
// and settles the audit intents of their requests in the same transaction.
// The chain-head row is locked FOR UPDATE first: an append by another
// instance waits until this one commits and then continues from its head, so
// the chain stays one line however many instances write.
func (s *Store) AppendAudit(ctx context.Context, records []domain.AuditRecord) error {
	if len(records) == 0 {
		return nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := appendAudit(ctx, tx, records); err != nil {
			return err
		}
		return settleIntents(ctx, tx, records)
	})
	if err != nil {
		if refusedData(err) {
			return fmt.Errorf("postgres: append audit: %w", errors.Join(err, ports.ErrRecordRefused))
		}
		return storeErr("append audit", err)
	}
	return nil
}

// appendAudit extends the hash chain by records inside tx, holding the
// chain-head lock until tx ends.
func appendAudit(ctx context.Context, tx pgx.Tx, records []domain.AuditRecord) error {
	if len(records) == 0 {
		return nil
	}
	var (
		seq, last int64
		prev      string
	)
	if err := tx.QueryRow(ctx, `SELECT h.seq, h.hash, COALESCE(a.time, 0) FROM audit_head h LEFT JOIN audit a ON a.seq = h.seq
		WHERE h.id = 1 FOR UPDATE OF h`).Scan(&seq, &prev, &last); err != nil {
		return fmt.Errorf("lock chain head: %w", err)
	}
	rows := make([][]any, len(records))
	for i := range records {
		r := &records[i]
		seq++
		r.NotBefore(time.UnixMicro(last)) // instances' clocks differ
		// Sealed text holds no NUL and no invalid UTF-8: PostgreSQL
		// refuses neither, so one record cannot fail the batch.
		r.Seal(seq, prev)
		prev, last = r.Hash, r.Time.UnixMicro()
		rows[i] = []any{r.Seq, int16(r.Version), r.Time.UnixMicro(), r.RequestID, r.Subject, domain.JoinRoles(r.Roles), string(r.AuthMethod),
			r.Method, r.Path, r.Client, string(r.Decision), r.Reason, int32(r.Status), r.PrevHash, r.Hash}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"audit"}, auditColumnList, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("insert audit records: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE audit_head SET seq = $1, hash = $2 WHERE id = 1`, seq, prev); err != nil {
		return fmt.Errorf("move chain head: %w", err)
	}
	return nil
}

// refusedData tells a record PostgreSQL refused for its content (SQLSTATE
// class 22, data exception, or 54, program limit exceeded) from a failing
// database: the audit writer then retries the batch without that record.
func refusedData(err error) bool {
	code := pgCode(err)
	return strings.HasPrefix(code, "22") || strings.HasPrefix(code, "54")
}

var auditColumnList = []string{"seq", "version", "time", "request_id", "subject", "roles", "auth_method", "method", "path", "client", "decision", "reason", "status", "prev_hash", "hash"}

var auditColumns = strings.Join(auditColumnList, ", ")

// QueryAudit returns matching records, newest first, reading a bounded
// number of rows (adapters/store/auditplan).
func (s *Store) QueryAudit(ctx context.Context, q ports.AuditQuery) ([]domain.AuditRecord, error) {
	var first, last *int64
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT min(seq) FROM audit), (SELECT max(seq) FROM audit)`).Scan(&first, &last); err != nil {
		return nil, storeErr("audit bounds", err)
	}
	if last == nil {
		return []domain.AuditRecord{}, nil
	}
	rng, err := auditplan.SeqRange(ctx, q, *first, *last, s.auditProbe)
	if err != nil || rng.Empty {
		return []domain.AuditRecord{}, err
	}
	var (
		selects []string
		args    []any
	)
	param := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	limit := ""
	if q.Limit > 0 {
		limit = " LIMIT " + strconv.Itoa(q.Limit)
	}
	for _, br := range auditplan.Branches(q) {
		where := []string{"seq >= " + param(rng.Lo), "seq < " + param(rng.Hi)}
		if br.Decision != "" {
			where = append(where, "decision = "+param(string(br.Decision)))
		}
		if br.Subject != "" {
			where = append(where, "subject = "+param(br.Subject))
		}
		// Exact for records written before time was kept non-decreasing.
		if !q.Since.IsZero() {
			where = append(where, "time >= "+param(q.Since.UnixMicro()))
		}
		if !q.Until.IsZero() {
			where = append(where, "time < "+param(q.Until.UnixMicro()))
		}
		selects = append(selects, `SELECT `+auditColumns+` FROM audit WHERE `+strings.Join(where, " AND ")+` ORDER BY seq DESC`+limit)
	}
	query := selects[0]
	if len(selects) > 1 {
		query = `SELECT * FROM ((` + strings.Join(selects, `) UNION ALL (`) + `)) branches ORDER BY seq DESC` + limit
	}
	return s.queryAudit(ctx, query, args...)
}

// auditProbe is the first record at or after seq, for auditplan's search.
func (s *Store) auditProbe(ctx context.Context, seq int64) (int64, int64, bool, error) {
	var found, micros int64
	err := s.pool.QueryRow(ctx, `SELECT seq, time FROM audit WHERE seq >= $1 ORDER BY seq LIMIT 1`, seq).Scan(&found, &micros)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, storeErr("audit time probe", err)
	}
	return found, micros, true, nil
}

// AuditChain returns records after seq in increasing order.
func (s *Store) AuditChain(ctx context.Context, after int64, limit int) ([]domain.AuditRecord, error) {
	return s.queryAudit(ctx, `SELECT `+auditColumns+` FROM audit WHERE seq > $1 ORDER BY seq LIMIT $2`, after, limit)
}

func (s *Store) queryAudit(ctx context.Context, query string, args ...any) ([]domain.AuditRecord, error) {
	rows, _ := s.pool.Query(ctx, query, args...)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.AuditRecord, error) {
		var (
			r                       domain.AuditRecord
			micros                  int64
			status, version         int32
			roles, method, decision string
		)
		if err := row.Scan(&r.Seq, &version, &micros, &r.RequestID, &r.Subject, &roles, &method, &r.Method, &r.Path, &r.Client,
			&decision, &r.Reason, &status, &r.PrevHash, &r.Hash); err != nil {
			return r, err
		}
		r.Time = time.UnixMicro(micros).UTC()
		r.Roles = domain.SplitRoles(roles)
		r.Status, r.Version = int(status), int(version)
		r.AuthMethod, r.Decision = domain.AuthMethod(method), domain.AuditDecision(decision)
		return r, nil
	})
	if err != nil {
		return nil, storeErr("query audit", err)
	}
	if out == nil {
		out = []domain.AuditRecord{}
	}
	return out, nil
}
