package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/domain"
)

// BenchmarkAppendAudit measures one group commit of 64 records, the batch a
// 64-connection load produces; ns/op divided by 64 is the cost per record.
func BenchmarkAppendAudit(b *testing.B) {
	store, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(b.TempDir(), "bench.db")), zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	defer closeStore()
	batch := make([]domain.AuditRecord, 64)
	for i := range batch {
		batch[i] = domain.AuditRecord{Time: time.Now(), RequestID: "0123456789abcdef01234567", Subject: "apikey:16f18b003772",
			Roles: []domain.Role{domain.RoleAdmin}, AuthMethod: domain.MethodAPIKey, Method: "GET", Path: "/api/v2/sessions",
			Decision: domain.AuditAllow, Reason: "role ADMIN grants sessions:read", Status: 200}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := store.AppendAudit(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
}
