package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/launch"
	"github.com/agentauth/agentauth/ports"
)

var ruleCounts = []int{10, 1000, 10000}

// decisionRows measures one tool-call decision with 10, 1,000 and 10,000
// policy rules: in process (the use case over a SQLite store, as the
// server wires it) and over HTTP (POST /api/v2/sessions/{id}/tool-calls to
// the server in API-key mode on a database holding the rules).
func decisionRows(o options, bin, tmp string) error {
	fmt.Printf("\nTool-call decision (one allow rule for ADMIN, the others about other subjects, projects and tools)\n")
	fmt.Printf("Over HTTP: %d connections, the server in API-key mode on SQLite\n", o.decisionConns)
	fmt.Printf("%-8s %16s %12s %10s %10s %9s %10s\n", "rules", "in process", "HTTP req/s", "p50", "p99", "CPU/req", "vs 10")
	var base struct{ inProc, http float64 }
	for _, n := range ruleCounts {
		inProc, err := decideInProcess(n)
		if err != nil {
			return err
		}
		dir := filepath.Join(tmp, fmt.Sprintf("rules-%d", n))
		if err := seedRules(filepath.Join(dir, "agentauth.db"), n); err != nil {
			return err
		}
		r, err := decideOverHTTP(o, bin, dir)
		if err != nil {
			return err
		}
		if n == ruleCounts[0] {
			base.inProc, base.http = inProc.Seconds(), r.rps
		}
		fmt.Printf("%-8d %13.1f µs %12.0f %10s %10s %9s   %.2f× in process, %.2f× HTTP time\n", n, float64(inProc.Nanoseconds())/1e3, r.rps,
			round(r.p50), round(r.p99), cpuPerRequest(r), inProc.Seconds()/base.inProc, base.http/r.rps)
	}
	return nil
}

// benchRules is n rules: one allowing every tool to ADMIN, the others
// about other subjects, projects and tools.
func benchRules(n int) []domain.PolicyRule {
	t0 := time.Now().UTC()
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

// seedRules creates the database at path with n rules in one transaction
// (a rule at a time through the API would be a fsync each).
func seedRules(path string, n int) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	_, closeStore, err := sqlite.Open(sqlite.Path(path), zap.NewNop())
	if err != nil {
		return err
	}
	closeStore() // migrated
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, r := range benchRules(n) {
		if _, err := tx.Exec(`INSERT INTO policies (id, effect, tool, scope, value, created_by, created_at) VALUES (?, ?, ?, ?, ?, 'loadgen', ?)`,
			r.ID, string(r.Effect), r.Tool, string(r.Scope), r.Value, r.CreatedAt.UnixNano()); err != nil {
			return fmt.Errorf("seed rules: %w", err)
		}
	}
	return tx.Commit()
}

// decideInProcess is the mean time of one decision over about two seconds,
// on a database in memory (/dev/shm) when there is one, so that it is the
// decision's CPU rather than the disk's fsync.
func decideInProcess(n int) (time.Duration, error) {
	dir, err := os.MkdirTemp("/dev/shm", "agentauth-loadgen")
	if err != nil {
		if dir, err = os.MkdirTemp("", "agentauth-loadgen"); err != nil {
			return 0, err
		}
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "agentauth.db")
	if err := seedRules(path, n); err != nil {
		return 0, err
	}
	store, closeStore, err := sqlite.Open(sqlite.Path(path), zap.NewNop())
	if err != nil {
		return 0, err
	}
	defer closeStore()
	// Every change needs the audit intent of its request, as the edge sets
	// it; the decision stores one intent row with the call, as it does
	// behind the edge (where the audit record then settles it).
	ctx := ports.WithAuditIntent(context.Background(), &domain.AuditIntent{RequestID: "loadgen", Subject: "adm",
		Roles: []domain.Role{domain.RoleAdmin}, AuthMethod: domain.MethodAPIKey, Client: "127.0.0.1", Method: "POST", Path: "/loadgen"})
	t0 := time.Now().UTC()
	if err := store.CreateSession(ctx, domain.Session{ID: "s1", Owner: "adm", Mode: domain.ModeAuto, State: domain.SessionActive, CreatedAt: t0}); err != nil {
		return 0, err
	}
	if err := store.CreateAgent(ctx, domain.Agent{ID: "a0", Session: "s1", CreatedBy: "adm", CreatedAt: t0}); err != nil {
		return 0, err
	}
	authz, err := domain.NewAuthorizer(nil)
	if err != nil {
		return 0, err
	}
	sessions := app.NewSessions(store, store, store, store, authz, app.SystemClock{})
	calls := app.NewToolCalls(store, store, store, app.NewPolicyRules(store), store, sessions, authz, app.SystemClock{})
	admin := domain.Principal{Subject: "adm", Roles: []domain.Role{domain.RoleAdmin}, Method: domain.MethodAPIKey}
	decide := func() error {
		c, err := calls.Decide(ctx, admin, "s1", app.CallRequest{Agent: "a0", Tool: "tool7.exec"})
		if err == nil && c.Decision.Effect != domain.EffectAllow {
			err = fmt.Errorf("decision %+v, want allow", c.Decision)
		}
		return err
	}
	if err := decide(); err != nil { // compiles the rules
		return 0, err
	}
	start, count := time.Now(), 0
	for time.Since(start) < 2*time.Second && count < 1_000_000 {
		if err := decide(); err != nil {
			return 0, err
		}
		count++
	}
	return time.Since(start) / time.Duration(count), nil
}

// decideOverHTTP starts the server on dir and drives tool-call decisions.
func decideOverHTTP(o options, bin, dir string) (result, error) {
	p, err := launch.Start(bin, serverEnv(dir, "SERVICE_API_KEY="+apiKey), 30*time.Second, "serve")
	if err != nil {
		return result{}, err
	}
	defer p.Kill()
	auth := header{"Authorization", "Bearer " + apiKey}
	var created struct{ ID string }
	body, err := call("POST", p.URL+"/api/v2/sessions", `{"title":"decisions","mode":"auto"}`, auth)
	if err == nil {
		err = json.Unmarshal(body, &created)
	}
	if err != nil {
		return result{}, fmt.Errorf("create session: %w", err)
	}
	session := created.ID
	if body, err = call("POST", p.URL+"/api/v2/sessions/"+session+"/agents", `{}`, auth); err == nil {
		err = json.Unmarshal(body, &created)
	}
	if err != nil {
		return result{}, fmt.Errorf("create agent: %w", err)
	}
	r := drive(request{method: "POST", url: p.URL + "/api/v2/sessions/" + session + "/tool-calls", header: auth,
		body: fmt.Sprintf(`{"agent":%q,"tool":"tool7.exec"}`, created.ID), server: p.Cmd.Process.Pid}, o.decisionConns, o.warmup, o.duration)
	if r.failed > 0 {
		return r, fmt.Errorf("tool-call decisions: %d failed: %s", r.failed, r.lastErr)
	}
	return r, nil
}
