package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
)

// BenchmarkSessionListPage is the use case behind GET /api/v2/sessions
// without a cursor, for an ADMIN (every session) and the USER owning them,
// with 1,000 sessions stored: the first page read from the store on every
// request ("store"), or kept in memory after the first ("memory"). The
// difference divided by the page's 51 rows is what each row costs SQLite
// (its VM steps, the row's decoding and the session's allocations).
func BenchmarkSessionListPage(b *testing.B) {
	for _, inMemory := range []bool{false, true} {
		for _, p := range []domain.Principal{
			{Subject: "admin", Roles: []domain.Role{domain.RoleAdmin}},
			{Subject: "bulk", Roles: []domain.Role{domain.RoleUser}},
		} {
			b.Run(map[bool]string{false: "store", true: "memory"}[inMemory]+"/"+string(p.Roles[0]), func(b *testing.B) {
				store, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(memDir(b), "bench.db")), zap.NewNop())
				if err != nil {
					b.Fatal(err)
				}
				defer closeStore()
				ctx := context.Background()
				if err := sqlite.BulkSessions(ctx, store, "bulk", 1_000); err != nil {
					b.Fatal(err)
				}
				authz, err := domain.NewAuthorizer(nil)
				if err != nil {
					b.Fatal(err)
				}
				rec := app.NewSessionRecords(store, store, store)
				uc := app.NewSessions(rec, store, store, rec, authz, app.SystemClock{})
				if inMemory {
					b.Cleanup(rec.KeepInMemory(store))
				}
				list := func() {
					page, err := uc.List(ctx, p, app.PageRequest{})
					if err != nil || len(page.Items) != app.DefaultPageSize {
						b.Fatalf("List = %d sessions, %v; want %d", len(page.Items), err, app.DefaultPageSize)
					}
				}
				list() // the first read from the store
				b.ReportAllocs()
				for b.Loop() {
					list()
				}
			})
		}
	}
}
