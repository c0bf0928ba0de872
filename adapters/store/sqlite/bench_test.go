package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/golang/mock/gomock"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
	"github.com/agentauth/agentauth/ports/porttest"
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

// BenchmarkListSessions reads the first page of every session (an
// ADMIN's default list: 51 rows, one telling whether there is a next page)
// and a page after a cursor in the middle, with 1,000 and 50,000 sessions
// stored; the cost should not grow with the table.
func BenchmarkListSessions(b *testing.B) {
	for _, rows := range []int{1_000, 50_000} {
		store, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(memDir(b), "bench.db")), zap.NewNop())
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if err := sqlite.BulkSessions(ctx, store, "bulk", rows); err != nil {
			b.Fatal(err)
		}
		first, err := store.ListSessions(ctx, ports.SessionFilter{Page: ports.Page{Limit: rows/2 + 1}})
		if err != nil {
			b.Fatal(err)
		}
		middle := ports.CursorOf(first[rows/2].CreatedAt, first[rows/2].ID)
		for _, page := range []struct {
			name  string
			after ports.Cursor
		}{{"first", ports.Cursor{}}, {"middle", middle}} {
			b.Run(fmt.Sprintf("rows=%d/page=%s", rows, page.name), func(b *testing.B) {
				f := ports.SessionFilter{Page: ports.Page{Limit: app.DefaultPageSize + 1, After: page.after}}
				b.ReportAllocs()
				for b.Loop() {
					if list, err := store.ListSessions(ctx, f); err != nil || len(list) != app.DefaultPageSize+1 {
						b.Fatalf("ListSessions = %d, %v", len(list), err)
					}
				}
			})
		}
		closeStore()
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
			ctx := porttest.Context(b)
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
			sessions := app.NewSessions(store, store, store, store, authz, app.SystemClock{})
			calls := app.NewToolCalls(store, store, store, app.NewPolicyRules(store), store, sessions, authz, app.SystemClock{})
			if _, err := calls.Decide(ctx, admin, "s1", app.CallRequest{Agent: "a0", Tool: "tool7.exec"}); err != nil { // compiles the rules
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				c, err := calls.Decide(ctx, admin, "s1", app.CallRequest{Agent: "a0", Tool: "tool7.exec"})
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

// BenchmarkCookieAuthenticate resolves a user_session cookie whose tokens
// are sealed in the store: read, unsealed and decoded on every request
// ("store"), or kept in memory after the first use ("memory").
func BenchmarkCookieAuthenticate(b *testing.B) {
	for _, inMemory := range []bool{false, true} {
		b.Run(map[bool]string{false: "store", true: "memory"}[inMemory], func(b *testing.B) {
			store, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(memDir(b), "bench.db")), zap.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			defer closeStore()
			idp := mocks.NewMockIdentityProvider(gomock.NewController(b))
			now := time.Now()
			idp.EXPECT().Ready().Return(nil).AnyTimes()
			idp.EXPECT().PasswordGrant(gomock.Any(), "alice", "pw").Return(ports.TokenSet{Subject: "alice", Username: "alice",
				Roles:       domain.RoleExtraction{Roles: []domain.Role{domain.RoleUser}, Source: domain.TokenID},
				AccessToken: strings.Repeat("a", 900), RefreshToken: strings.Repeat("r", 700), IDToken: strings.Repeat("i", 900),
				AccessExpiry: now.Add(time.Hour), RefreshExpiry: now.Add(2 * time.Hour)}, nil)
			cfg := app.LoginConfig{PasswordLogin: true, SessionIdle: time.Hour, SessionMax: 8 * time.Hour, RefreshBefore: time.Minute,
				LoginFailures: 5, LoginWindow: time.Minute, TokenKey: make([]byte, 32)}
			login, err := app.NewLogin(cfg, idp, store, store, store, app.SystemClock{})
			if err != nil {
				b.Fatal(err)
			}
			if inMemory {
				b.Cleanup(login.KeepSessionsInMemory(store))
			}
			ctx := porttest.Context(b)
			res, err := login.PasswordLogin(ctx, "alice", "pw", "127.0.0.1")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := login.Authenticate(ctx, res.Cookie); err != nil { // the first use reads the store
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := login.Authenticate(ctx, res.Cookie); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConcurrentChanges stores tool calls (each with its audit
// intent) from 64 goroutines on a database on disk, as 64 connections of
// decisions do: cpu-µs/op is the process's CPU per change (user and
// system, the syncs included).
func BenchmarkConcurrentChanges(b *testing.B) {
	store, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(b.TempDir(), "bench.db")), zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	defer closeStore()
	ctx := porttest.Context(b)
	t0 := time.Now().UTC()
	if err := store.CreateSession(ctx, domain.Session{ID: "s1", Owner: "adm", Mode: domain.ModeAuto, State: domain.SessionActive, CreatedAt: t0}); err != nil {
		b.Fatal(err)
	}
	if err := store.CreateAgent(ctx, domain.Agent{ID: "a0", Session: "s1", CreatedBy: "adm", CreatedAt: t0}); err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	b.SetParallelism(64 / max(1, runtime.GOMAXPROCS(0)))
	start := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprintf("call_%d", n.Add(1))
			call := domain.ToolCall{ID: id, Session: "s1", Agent: "a0", Tool: "fs.read", Decision: domain.ToolDecision{Effect: domain.EffectAllow},
				Status: domain.CallAllowed, RequestedBy: "adm", CreatedAt: t0}
			if err := store.CreateToolCall(ctx, call); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-start).Microseconds())/float64(b.N), "cpu-µs/op")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
