package wire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/rest"
	"github.com/agentauth/agentauth/adapters/store/postgres"
	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/wire"
)

const clusterKey = "cluster-test-key-0123456789abcdef"

// clusterAuditKey and clusterAgentKey are the signing keys instances on one
// test database share.
const (
	clusterAuditKey = "Y2x1c3Rlci1hdWRpdC1zaWduaW5nLWtleS0wMTIzNDU"
	clusterAgentKey = "Y2x1c3Rlci1hZ2VudC10b2tlbi1zaWduaW5nLWtleS0"
)

// instance is one agentauth serving on 127.0.0.1, as a replica would.
type instance struct {
	url     string
	dataDir string
	stop    func()
}

// startInstance runs the API-key injector with the given database URL
// (empty: SQLite in its own data folder), with the settings tune changes,
// until the test ends.
func startInstance(t *testing.T, dbURL string, tune ...func(*config.Config)) *instance {
	t.Helper()
	cfg := config.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.Auth.APIKey = clusterKey
	cfg.Database.URL = dbURL
	if dbURL != "" {
		// every instance's, as from one Secret
		cfg.Audit.SigningKey, cfg.Auth.AgentTokens.SigningKey = clusterAuditKey, clusterAgentKey
	}
	for _, f := range tune {
		f(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	srv, cleanup, err := wire.APIKey(cfg, zap.NewNop())
	if err != nil {
		t.Fatalf("wire.APIKey: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cleanup()
		t.Fatalf("listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	var once sync.Once
	in := &instance{url: "http://" + ln.Addr().String(), dataDir: cfg.DataDir, stop: func() {
		once.Do(func() {
			cancel()
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
			cleanup()
		})
	}}
	t.Cleanup(in.stop)
	return in
}

var client = &http.Client{Timeout: 30 * time.Second}

// call sends one request and returns its status and request id.
// mustCall is call with key, failing the test unless the answer's status
// is want; it returns the answer's JSON object.
func mustCall(t *testing.T, want int, method, url, key string, body any) map[string]any {
	t.Helper()
	status, _, got := call(t, method, url, key, body)
	var out map[string]any
	_ = json.Unmarshal(got, &out)
	if status != want {
		t.Fatalf("%s %s = %d %s, want %d", method, url, status, got, want)
	}
	return out
}

func call(t *testing.T, method, url, key string, body any) (int, string, []byte) {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return 0, "", nil
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header.Get(rest.HeaderRequestID), buf.Bytes()
}

func TestStoreSelection(t *testing.T) {
	tests := []struct {
		name     string
		postgres bool
	}{
		{"sqlite by default", false},
		{"postgres from database.url", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dbURL := ""
			if tt.postgres {
				dbURL = pgtest.URL(t)
			}
			in := startInstance(t, dbURL)
			status, _, body := call(t, http.MethodPost, in.url+"/api/v2/sessions", clusterKey, map[string]string{"title": "t"})
			if status != http.StatusCreated {
				t.Fatalf("POST /api/v2/sessions = %d %s, want 201", status, body)
			}
			var created struct{ ID string }
			if err := json.Unmarshal(body, &created); err != nil {
				t.Fatalf("POST /api/v2/sessions body %s: %v", body, err)
			}
			_, statErr := os.Stat(filepath.Join(in.dataDir, "agentauth.db"))
			if gotFile := statErr == nil; gotFile == tt.postgres {
				t.Errorf("SQLite file in the data folder: got %v, want %v", gotFile, !tt.postgres)
			}
			if tt.postgres {
				st, closeStore, err := postgres.Open(context.Background(), postgres.URL(dbURL), zap.NewNop())
				if err != nil {
					t.Fatalf("postgres.Open: %v", err)
				}
				defer closeStore()
				if _, err := st.GetSession(context.Background(), created.ID); err != nil {
					t.Errorf("session created over HTTP is not in PostgreSQL: %v", err)
				}
			}
		})
	}
	t.Run("unreachable postgres fails the start", func(t *testing.T) {
		cfg := config.Defaults()
		cfg.DataDir = t.TempDir()
		cfg.Auth.APIKey = clusterKey
		// Port 1 on loopback: nothing listens there, so the connection is refused at once.
		cfg.Database.URL = "postgres://nobody:secret-password@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"
		srv, cleanup, err := wire.APIKey(cfg, zap.NewNop())
		if err == nil {
			cleanup()
			t.Fatalf("wire.APIKey with an unreachable database: got a server %v, want an error", srv)
		}
		if bytes.Contains([]byte(err.Error()), []byte("secret-password")) {
			t.Errorf("start error %q shows the database password", err)
		}
	})
}

// TestClusterAuditChain runs two instances on one PostgreSQL database under
// concurrent load: every answered request must be in the audit log, and the
// records of both must form one unbroken chain.
func TestClusterAuditChain(t *testing.T) {
	dbURL := pgtest.URL(t)
	a, b := startInstance(t, dbURL), startInstance(t, dbURL)
	instances := []*instance{a, b}

	// A session created on A is visible on B: the data is shared, not cached.
	status, _, body := call(t, http.MethodPost, a.url+"/api/v2/sessions", clusterKey, map[string]string{"title": "shared"})
	if status != http.StatusCreated {
		t.Fatalf("POST /api/v2/sessions on A = %d %s, want 201", status, body)
	}
	var created struct{ ID string }
	if err := json.Unmarshal(body, &created); err != nil || created.ID == "" {
		t.Fatalf("POST /api/v2/sessions body %s: no id (%v)", body, err)
	}
	if status, _, body := call(t, http.MethodGet, b.url+"/api/v2/sessions/"+created.ID, clusterKey, nil); status != http.StatusOK {
		t.Fatalf("GET A's session on B = %d %s, want 200", status, body)
	}

	const (
		workers    = 8
		perWorker  = 40
		wrongKey   = "wrong-key-wrong-key-wrong-key-00"
		maxRecords = 1_000_000
	)
	var (
		mu  sync.Mutex
		ids = map[string]int{} // request id -> status answered
		wg  sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				in := instances[(w+i)%2]
				key, want := clusterKey, http.StatusOK
				if i%5 == 4 {
					key, want = wrongKey, http.StatusUnauthorized
				}
				status, id, _ := call(t, http.MethodGet, in.url+"/api/v2/sessions?limit=1", key, nil)
				if status != want || id == "" {
					t.Errorf("GET /api/v2/sessions = %d (request id %q), want %d", status, id, want)
					continue
				}
				mu.Lock()
				ids[id] = status
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Read the chain while both instances still run: a response is sent only
	// after its record is committed, so every answered request is there now.
	st, closeStore, err := postgres.Open(context.Background(), postgres.URL(dbURL), zap.NewNop())
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	defer closeStore()
	chain, err := st.AuditChain(context.Background(), 0, maxRecords)
	if err != nil {
		t.Fatalf("AuditChain: %v", err)
	}
	if br := domain.VerifyChain(domain.GenesisHash, chain); br != nil {
		t.Fatalf("audit chain broken: %+v", br)
	}
	inChain := map[string]domain.AuditRecord{}
	for i, r := range chain {
		if want := int64(i + 1); r.Seq != want {
			t.Fatalf("record %d has seq %d, want %d (a gap)", i, r.Seq, want)
		}
		inChain[r.RequestID] = r
	}
	missing := 0
	for id, status := range ids {
		r, ok := inChain[id]
		if !ok {
			missing++
			continue
		}
		if r.Status != status {
			t.Errorf("record of %s has status %d, want the answered %d", id, r.Status, status)
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d answered requests are missing from the audit chain", missing, len(ids))
	}
	if got, want := len(ids), workers*perWorker; got != want {
		t.Errorf("distinct request ids = %d, want %d", got, want)
	}
	t.Logf("%d requests over 2 instances; chain of %d records verified", len(ids), len(chain))
}
