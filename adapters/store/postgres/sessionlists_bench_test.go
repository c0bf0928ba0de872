package postgres_test

import (
	"fmt"
	"testing"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports/porttest"
)

// BenchmarkSessionCreate is what keeping session lists in memory costs a
// write: one session created through the use case, its lists forgotten by
// no instance (listeners=0: lists are not kept), by this one, or by this
// one and another on the same database, each of which must acknowledge
// the announcement before the write is answered.
func BenchmarkSessionCreate(b *testing.B) {
	admin := domain.Principal{Subject: "admin", Roles: []domain.Role{domain.RoleAdmin}}
	authz, err := domain.NewAuthorizer(nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, listeners := range []int{0, 1, 2} {
		b.Run(fmt.Sprintf("listeners=%d", listeners), func(b *testing.B) {
			url := pgtest.URL(b)
			st := open(b, url)
			rec := app.NewSessionRecords(st, st, st)
			uc := app.NewSessions(rec, st, st, rec, authz, app.SystemClock{})
			if listeners > 0 {
				b.Cleanup(rec.KeepInMemory(st))
			}
			if listeners > 1 {
				other := open(b, url)
				b.Cleanup(app.NewSessionRecords(other, other, other).KeepInMemory(other))
			}
			ctx := porttest.Context(b)
			for l, err := st.Listeners(ctx); len(l) < listeners; l, err = st.Listeners(ctx) {
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := uc.Create(ctx, admin, app.NewSession{Mode: string(domain.ModeAsk)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
