package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentauth/agentauth/internal/launch"
)

// Keys every instance sharing the database signs with (config requires
// them with a database).
const (
	pgAuditKey = "SERVICE_AUDIT_SIGNING_KEY=bG9hZGdlbi1hdWRpdC1zaWduaW5nLWtleS0wMTIzNDU"
	pgAgentKey = "SERVICE_AGENT_TOKENS_SIGNING_KEY=bG9hZGdlbi1hZ2VudC10b2tlbi1zaWduaW5nLWtleTA"
)

// postgresDecisionRow measures allowed tool-call decisions across two
// instances sharing one PostgreSQL database (a schema of its own in the
// database at base, dropped after), o.decisionConns connections split
// between them; CPU/req is both instances' CPU over both's answers.
func postgresDecisionRow(o options, bin, tmp, base string) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "agentauth_loadgen_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer func() { _, _ = conn.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`) }()
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	var urls []string
	var pids []int
	for i := range 2 {
		p, err := launch.Start(bin, serverEnv(filepath.Join(tmp, fmt.Sprintf("pg%d", i)), "SERVICE_API_KEY="+apiKey,
			"SERVICE_DATABASE_URL="+u.String(), pgAuditKey, pgAgentKey), 30*time.Second, "serve")
		if err != nil {
			return err
		}
		defer p.Kill()
		urls, pids = append(urls, p.URL), append(pids, p.Cmd.Process.Pid)
	}
	auth := header{"Authorization", "Bearer " + apiKey}
	var created struct{ ID string }
	body, err := call("POST", urls[0]+"/api/v2/sessions", `{"title":"decisions","mode":"auto"}`, auth)
	if err == nil {
		err = json.Unmarshal(body, &created)
	}
	session := created.ID
	if err == nil {
		if body, err = call("POST", urls[0]+"/api/v2/sessions/"+session+"/agents", `{}`, auth); err == nil {
			err = json.Unmarshal(body, &created)
		}
	}
	if err == nil {
		_, err = call("POST", urls[0]+"/api/v2/policies", `{"effect":"allow","tool":"*","scope":"role","value":"ADMIN"}`, auth)
	}
	if err != nil {
		return fmt.Errorf("postgres decisions: setup: %w", err)
	}
	results := make([]result, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = drive(request{method: "POST", url: urls[i] + "/api/v2/sessions/" + session + "/tool-calls", header: auth,
				body: fmt.Sprintf(`{"agent":%q,"tool":"tool7.exec"}`, created.ID), server: pids[i]}, max(o.decisionConns/2, 1), o.warmup, o.duration)
		}()
	}
	wg.Wait()
	var sum result
	for _, r := range results {
		if r.failed > 0 {
			return fmt.Errorf("postgres decisions: %d failed: %s", r.failed, r.lastErr)
		}
		sum.ok, sum.rps, sum.cpu = sum.ok+r.ok, sum.rps+r.rps, sum.cpu+r.cpu*time.Duration(r.ok)
		sum.p50, sum.p99 = max(sum.p50, r.p50), max(sum.p99, r.p99)
	}
	if sum.ok > 0 {
		sum.cpu /= time.Duration(sum.ok)
	}
	fmt.Printf("\nTool-call decisions across two instances on PostgreSQL, %d connections split between them\n", o.decisionConns)
	fmt.Printf("%-44s %10s %10s %10s %9s\n", "request", "req/s", "p50 (max)", "p99 (max)", "CPU/req")
	fmt.Printf("%-44s %10.0f %10s %10s %9s\n", "POST …/tool-calls, allowed", sum.rps, round(sum.p50), round(sum.p99), cpuPerRequest(sum))
	return nil
}
