package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/app"
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

// BenchmarkDecideToolCall is one tool-call decision in process (session,
// agent, tool and settings read, rules from the compiled index, decision
// stored) with 10, 1,000 and 10,000 policy rules about many subjects and
// tools; the cost should not grow with the rules.
func BenchmarkDecideToolCall(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			store, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(memDir(b), "bench.db")), zap.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			defer closeStore()
			ctx := context.Background()
			t0 := time.Now().UTC()
			admin := domain.Principal{Subject: "adm", Roles: []domain.Role{domain.RoleAdmin}, Method: domain.MethodAPIKey}
			if err := store.CreateSession(ctx, domain.Session{ID: "s1", Owner: "adm", Mode: domain.ModeAuto, State: domain.SessionActive, CreatedAt: t0}); err != nil {
				b.Fatal(err)
			}
			if err := store.CreateAgent(ctx, domain.Agent{ID: "a0", Session: "s1", CreatedBy: "adm", CreatedAt: t0}); err != nil {
				b.Fatal(err)
			}
			for _, r := range benchRules(n, t0) {
				if err := store.CreatePolicy(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
			authz, _ := domain.NewAuthorizer(nil)
			sessions := app.NewSessions(store, store, authz, app.SystemClock{}).WithTeams(store, store)
			calls := app.NewToolCalls(store, store, store, app.NewPolicyRules(store), store, sessions, authz, app.SystemClock{})
			if _, err := calls.Decide(ctx, admin, "s1", "a0", "tool7.exec"); err != nil { // compiles the rules
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				c, err := calls.Decide(ctx, admin, "s1", "a0", "tool7.exec")
				if err != nil || c.Decision.Effect != domain.EffectAllow {
					b.Fatalf("Decide = %+v, %v", c, err)
				}
			}
		})
	}
}

// benchRules is n rules: one allowing every tool to ADMIN, the others
// about other subjects, projects and tools.
func benchRules(n int, t0 time.Time) []domain.PolicyRule {
	rules := []domain.PolicyRule{{ID: "allow", Effect: domain.EffectAllow, Tool: "*", Scope: domain.ScopeRole, Value: "ADMIN", CreatedAt: t0}}
	for i := 1; i < n; i++ {
		r := domain.PolicyRule{ID: fmt.Sprintf("r%05d", i), Effect: domain.EffectDeny, Tool: fmt.Sprintf("tool%d.*", i),
			Scope: domain.ScopeSubject, Value: fmt.Sprintf("user%d", i%500), CreatedAt: t0.Add(time.Duration(i))}
		if i%2 == 0 {
			r.Scope, r.Value, r.Tool = domain.ScopeProject, fmt.Sprintf("p%d", i%50), fmt.Sprintf("srv%d.exec", i)
		}
		rules = append(rules, r)
	}
	return rules
}

// memDir is a folder in memory (/dev/shm) when there is one, so that the
// figures are the decision's CPU and not the disk's fsync latency.
func memDir(b *testing.B) string {
	dir, err := os.MkdirTemp("/dev/shm", "agentauth-bench")
	if err != nil {
		return b.TempDir()
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
