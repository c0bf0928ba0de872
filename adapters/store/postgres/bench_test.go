package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/postgres"
	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/domain"
)

// BenchmarkAppendAudit measures one group commit of the audit log: a batch
// of records appended in one transaction behind the chain-head lock.
func BenchmarkAppendAudit(b *testing.B) {
	for _, size := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			st, closeStore, err := postgres.Open(context.Background(), postgres.URL(pgtest.URL(b)), zap.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			defer closeStore()
			batch := make([]domain.AuditRecord, size)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j := range batch {
					batch[j] = domain.AuditRecord{Time: time.Now(), RequestID: "bench", Subject: "admin",
						Roles: []domain.Role{domain.RoleAdmin}, AuthMethod: domain.MethodAPIKey, Method: "GET",
						Path: "/api/v2/sessions", Decision: domain.AuditAllow, Reason: "role ADMIN grants sessions:read", Status: 200}
				}
				if err := st.AppendAudit(context.Background(), batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
