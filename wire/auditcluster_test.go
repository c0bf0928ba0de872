package wire_test

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditarchive"
	"github.com/agentauth/agentauth/adapters/auditsign"
	"github.com/agentauth/agentauth/adapters/store/postgres"
	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/wire"

	"github.com/agentauth/agentauth/internal/testwait"
)

// rawGet sends the request target as raw bytes on its own connection and
// returns the status (0 on a transport error, reported).
func rawGet(t *testing.T, url, target string) int {
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), 5*time.Second)
	if err != nil {
		t.Error(err)
		return 0
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write([]byte("GET " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")); err != nil {
		t.Error(err)
		return 0
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Error(err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestRawBytesNeverFailAPostgresBatch: anonymous requests whose target is
// not UTF-8 were refused by PostgreSQL and failed the whole group commit,
// so ADMIN requests in the same batch got 503. Now every record is stored
// (escaped) and the chain verifies.
func TestRawBytesNeverFailAPostgresBatch(t *testing.T) {
	in := startInstance(t, pgtest.URL(t))
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 30 {
				if w < 2 {
					if got := rawGet(t, in.url, "/\xff\xfe\xc3?q=\xc3\x28"); got != http.StatusUnauthorized {
						t.Errorf("raw-byte request = %d, want 401", got)
					}
					continue
				}
				if status, _, body := call(t, http.MethodGet, in.url+"/api/v2/sessions?limit=1", clusterKey, nil); status != http.StatusOK {
					t.Errorf("ADMIN GET /api/v2/sessions = %d %s, want 200", status, body)
				}
			}
		}()
	}
	wg.Wait()
	status, _, body := call(t, http.MethodGet, in.url+"/api/v2/audit/verify?from=0", clusterKey, nil)
	var got struct {
		OK      bool  `json:"ok"`
		Checked int64 `json:"checked"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &got) != nil || !got.OK || got.Checked < 180 {
		t.Errorf("verify = %d %s, want ok over at least 180 records", status, body)
	}
}

// TestClusterCheckpointsShareOneKey: two instances on one database, signing
// with one key, extend one checkpoint chain; it verifies offline with
// the one public key, and every instance's API verifies the other's.
func TestClusterCheckpointsShareOneKey(t *testing.T) {
	dbURL := pgtest.URL(t)
	seed := make([]byte, 32)
	_, _ = rand.Read(seed)
	// As config.Resolve leaves it after reading audit.signingKeyFile, or
	// as SERVICE_AUDIT_SIGNING_KEY from a Secret gives it.
	tune := func(c *config.Config) {
		c.Audit.SigningKey, c.Audit.CheckpointEvery = base64.RawURLEncoding.EncodeToString(seed), 7
	}
	a, b := startInstance(t, dbURL, tune), startInstance(t, dbURL, tune)
	for i := range 40 {
		in := []*instance{a, b}[i%2]
		if status, _, body := call(t, http.MethodGet, in.url+"/api/v2/me", clusterKey, nil); status != http.StatusOK {
			t.Fatalf("GET /api/v2/me = %d %s", status, body)
		}
	}
	a.stop()
	for _, path := range []string{"/api/v2/audit/verify", "/api/v2/audit/verify?from=0"} {
		status, _, body := call(t, http.MethodGet, b.url+path, clusterKey, nil)
		if status != http.StatusOK || !strings.Contains(string(body), `"ok":true`) {
			t.Errorf("GET %s on B = %d %s, want ok", path, status, body)
		}
	}
	b.stop()

	st, closeStore, err := postgres.Open(context.Background(), postgres.URL(dbURL), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	cps, err := st.Checkpoints(context.Background(), 0, 1000)
	if err != nil || len(cps) == 0 {
		t.Fatalf("checkpoints = %d, %v; want at least the one at stop", len(cps), err)
	}
	key, err := auditsign.ParseSeed(base64.RawURLEncoding.EncodeToString(seed))
	if err != nil {
		t.Fatal(err)
	}
	audit := app.NewAudit(st)
	rep, err := app.VerifyAll(domain.Genesis, func(emit func(domain.AuditRecord) error) error { return audit.Export(context.Background(), 0, emit) },
		cps, app.KeySet(key.Public().(ed25519.PublicKey)), nil)
	if err != nil || !rep.OK() || rep.Anchored != len(cps) {
		t.Errorf("offline verify: %+v, %v; want ok with all %d checkpoints anchored", rep, err, len(cps))
	}
}

// TestClusterAuditRetention: instances sharing a database with
// audit.retention set cut the chain once, at the newest signed checkpoint
// past retention, archive the records removed in one instance's data dir,
// and every instance's API verifies the kept chain from the cut.
func TestClusterAuditRetention(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.URL(t)
	seed := make([]byte, 32)
	_, _ = rand.Read(seed)
	key, err := auditsign.ParseSeed(base64.RawURLEncoding.EncodeToString(seed))
	if err != nil {
		t.Fatal(err)
	}
	// 30 records 100 days old, a checkpoint at 20.
	st, closeStore, err := postgres.Open(ctx, postgres.URL(dbURL), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	for i := range 30 {
		rec := []domain.AuditRecord{{Time: time.Now().Add(-100 * 24 * time.Hour), RequestID: "old", Subject: "uma", Method: "GET",
			Path: "/api/v2/sessions", Decision: domain.AuditAllow, Reason: "role USER grants sessions:read", Status: 200}}
		if err := st.AppendAudit(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if i == 19 {
			if _, _, err := st.AppendCheckpoint(ctx, func(*domain.AuditCheckpoint) (domain.AuditCheckpoint, bool) {
				cp := domain.AuditCheckpoint{Seq: rec[0].Seq, Hash: rec[0].Hash, Time: time.Now()}
				cp.Sign(key)
				return cp, true
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	tune := func(c *config.Config) {
		c.Audit.SigningKey, c.Audit.Retention = base64.RawURLEncoding.EncodeToString(seed), "90d"
	}
	a, b := startInstance(t, dbURL, tune), startInstance(t, dbURL, tune)
	// Retention runs in the background at start.
	testwait.Until(t, time.Minute, "the retention cut", func() (bool, string) {
		start, err := st.ChainStart(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return start.Next == 21, fmt.Sprintf("chain start %+v", start)
	})
	for _, in := range []*instance{a, b} {
		for _, path := range []string{"/api/v2/audit/verify", "/api/v2/audit/verify?from=0"} {
			status, _, body := call(t, http.MethodGet, in.url+path, clusterKey, nil)
			if status != http.StatusOK || !strings.Contains(string(body), `"ok":true`) {
				t.Errorf("GET %s = %d %s, want ok", path, status, body)
			}
		}
	}
	a.stop()
	b.stop()
	var archives []string
	for _, in := range []*instance{a, b} {
		names, _ := filepath.Glob(filepath.Join(in.dataDir, "audit", "archive", "*"))
		archives = append(archives, names...)
	}
	if len(archives) != 1 || filepath.Base(archives[0]) != auditarchive.Name(1, 20) {
		t.Fatalf("archives %v, want the one of records 1 to 20", archives)
	}
	if old, err := st.AuditChain(ctx, 0, 1); err != nil || len(old) != 1 || old[0].Seq != 21 {
		t.Fatalf("first record kept = %+v, %v; want 21", old, err)
	}
}

// TestClusterRefusesAnotherAuditKey: on a database whose checkpoints one
// key signed, an instance with another key does not start (it would sign
// checkpoints that key's verification rejects): the error names the
// setting and both key ids. The instances with the chain's key start.
func TestClusterRefusesAnotherAuditKey(t *testing.T) {
	dbURL := pgtest.URL(t)
	a := startInstance(t, dbURL)
	if status, _, body := call(t, http.MethodGet, a.url+"/api/v2/me", clusterKey, nil); status != http.StatusOK {
		t.Fatalf("GET /api/v2/me = %d %s", status, body)
	}
	a.stop() // signs a checkpoint of the head

	other := make([]byte, 32)
	_, _ = rand.Read(other)
	cfg := config.Defaults()
	cfg.DataDir, cfg.Auth.APIKey, cfg.Database.URL, cfg.Auth.AgentTokens.SigningKey = t.TempDir(), clusterKey, dbURL, clusterAgentKey
	cfg.Audit.SigningKey = base64.RawURLEncoding.EncodeToString(other)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	srv, cleanup, err := wire.APIKey(cfg, zap.NewNop())
	if err == nil {
		cleanup()
		t.Fatalf("an instance with another audit signing key started: %v", srv)
	}
	theirs, _ := auditsign.ParseSeed(cfg.Audit.SigningKey)
	chain, _ := auditsign.ParseSeed(clusterAuditKey)
	for _, want := range []string{"SERVICE_AUDIT_SIGNING_KEY", "audit.signingKeyFile",
		domain.AuditKeyID(theirs.Public().(ed25519.PublicKey)), domain.AuditKeyID(chain.Public().(ed25519.PublicKey))} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start error %q does not name %s", err, want)
		}
	}
	b := startInstance(t, dbURL)
	if status, _, body := call(t, http.MethodGet, b.url+"/api/v2/audit/verify?from=0", clusterKey, nil); status != http.StatusOK ||
		!strings.Contains(string(body), `"ok":true`) {
		t.Errorf("verify on an instance with the chain's key = %d %s, want ok", status, body)
	}
}
