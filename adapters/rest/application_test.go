package rest

import (
	"context"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// SQLite is what the service opens in SQLite mode (wire/store.go): the
// store, and the audit chain's durable log in the folder "audit" beside
// it, indexed by the store. Audit records are written and read through the
// log, as the service writes and reads them.
type SQLite struct {
	*sqlite.Store
	audit ports.AuditStore
}

// OpenSQLite opens the store at path and its audit log; the cleanup
// closes both.
func OpenSQLite(path string, log *zap.Logger) (*SQLite, func(), error) {
	st, closeStore, err := sqlite.Open(sqlite.Path(path), log)
	if err != nil {
		return nil, nil, err
	}
	d, closeLog, err := auditlog.OpenDurable(filepath.Join(filepath.Dir(path), "audit"), st, auditlog.Retention{}, log)
	if err != nil {
		closeStore()
		return nil, nil, err
	}
	return &SQLite{Store: st, audit: d}, func() { closeLog(); closeStore() }, nil
}

// openSQLiteTable is OpenSQLite with the audit records in the store's own
// table, the layout PostgreSQL keeps: the tampering tests edit records
// with sqlitetest, which knows the table and not the log.
func openSQLiteTable(path string, log *zap.Logger) (*SQLite, func(), error) {
	st, closeStore, err := sqlite.Open(sqlite.Path(path), log)
	if err != nil {
		return nil, nil, err
	}
	return &SQLite{Store: st, audit: st}, closeStore, nil
}

// AppendAudit appends to the log (or the table).
func (s *SQLite) AppendAudit(ctx context.Context, records []domain.AuditRecord) error {
	return s.audit.AppendAudit(ctx, records)
}

// QueryAudit queries the log's index (or the table).
func (s *SQLite) QueryAudit(ctx context.Context, q ports.AuditQuery) ([]domain.AuditRecord, error) {
	return s.audit.QueryAudit(ctx, q)
}

// AuditChain reads the log (or the table).
func (s *SQLite) AuditChain(ctx context.Context, after int64, limit int) ([]domain.AuditRecord, error) {
	return s.audit.AuditChain(ctx, after, limit)
}

// Stores are the store ports of the use cases, as the service's wiring
// hands them out: the tests of this package (and of rest_test) build their
// servers' use cases with app.NewApplication over them, the constructor
// wire uses.
func (s *SQLite) Stores() app.Stores {
	return app.Stores{Sessions: s, Audit: s, Checkpoints: s, Settings: s, Projects: s, Catalog: s, Policies: s,
		Agents: s, ToolCalls: s, SessionModes: s, Quotas: s, Connections: s}
}
