package rest

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/adapters/store/sqlite/sqlitetest"
)

// rawRequest writes req on a new TCP connection, byte for byte (no client
// library cleans it up), and returns the response status.
func rawRequest(t *testing.T, url, req string) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", req, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestRawBytesInTheRequestKeepTheChainIntact: a request target with bytes
// that are not UTF-8 (and a NUL-free control byte) was hashed raw but
// stored as U+FFFD, so verify reported the chain broken from then on.
func TestRawBytesInTheRequestKeepTheChainIntact(t *testing.T) {
	h := axNew(t)
	for _, target := range []string{"/\xff\xfe\xc3", "/api/v2/sessions?q=\xc3\x28&x=\\", "/\x7f%00\xed\xa0\x80"} {
		if got := rawRequest(t, h.url, "GET "+target+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); got != 401 {
			t.Errorf("GET %q = %d, want 401", target, got)
		}
	}
	got := h.must(t, 200, "aud", "GET", "/api/v2/audit/verify", "")
	if got["ok"] != true {
		t.Errorf("verify after raw-byte requests = %v, want ok", got)
	}
}

// TestAuditRecordKeepsTargetAndClient: the record holds the request target
// with its query, as sent, and the client address.
func TestAuditRecordKeepsTargetAndClient(t *testing.T) {
	h := axNew(t)
	h.must(t, 200, "uma", "GET", "/api/v2/sessions?limit=3", "")
	recs, err := h.store.AuditChain(t.Context(), 0, 10)
	if err != nil || len(recs) != 1 {
		t.Fatalf("AuditChain = %d records, %v", len(recs), err)
	}
	if r := recs[0]; r.Path != "/api/v2/sessions?limit=3" || r.Client != "127.0.0.1" {
		t.Errorf("record path %q client %q, want /api/v2/sessions?limit=3 from 127.0.0.1", r.Path, r.Client)
	}
}

// verifyWalk walks the whole chain through GET /api/v2/audit/verify, limit
// records a call, from the first record, and returns every break reported
// (kind@seq).
func verifyWalk(t *testing.T, h *axHarness, limit int) []string {
	t.Helper()
	var breaks []string
	from := "0"
	for calls := 0; ; calls++ {
		if calls > 100 {
			t.Fatal("verify walk does not end")
		}
		got := h.must(t, 200, "aud", "GET", "/api/v2/audit/verify?from="+from+"&limit="+strconv.Itoa(limit), "")
		if got["checked"].(float64) > float64(limit) {
			t.Fatalf("one call checked %v records, want at most %d", got["checked"], limit)
		}
		breaks = append(breaks, breakList(got)...)
		if got["complete"] == true {
			return breaks
		}
		from = got["next"].(string)
	}
}

func breakList(got map[string]any) []string {
	var out []string
	for _, b := range got["breaks"].([]any) {
		m := b.(map[string]any)
		out = append(out, fmt.Sprintf("%s@%d", m["kind"], int64(m["seq"].(float64))))
	}
	return out
}

// TestAuditTamperingIsNamed: each way of tampering with the stored log
// (with the service stopped, as an attacker with the file would) is
// reported by GET /api/v2/audit/verify by its name, both by the default
// call (from the latest signed checkpoint) and by a walk of the whole
// chain in bounded steps; the untouched log verifies.
func TestAuditTamperingIsNamed(t *testing.T) {
	// Checkpoints are signed asynchronously every 5 records: which heads
	// they cover (if the signer ran before the stop at all) varies; the last
	// one, at stop, is 12.
	rewritten := func(cps []int64) []string {
		var out []string
		for _, seq := range cps {
			if seq >= 7 {
				out = append(out, fmt.Sprintf("rewritten@%d", seq))
			}
		}
		return out
	}
	tests := []struct {
		name        string
		tamper      func(t *testing.T, path string)
		walk        func(cps []int64) []string // the breaks a whole walk reports
		defaultCall []string                   // the breaks the default call reports
	}{
		{"untouched", func(*testing.T, string) {}, func([]int64) []string { return nil }, nil},
		{"edited record", func(t *testing.T, p string) { sqlitetest.EditRecord(t, p, 3) },
			func([]int64) []string { return []string{"edited@3"} }, nil},
		{"deleted record", func(t *testing.T, p string) { sqlitetest.DeleteRecords(t, p, 4, 4) },
			func([]int64) []string { return []string{"deleted@4"} }, nil},
		{"truncated tail", func(t *testing.T, p string) { sqlitetest.DeleteRecords(t, p, 9, 12) },
			func([]int64) []string { return []string{"truncated@9"} }, []string{"truncated@9"}},
		{"tail rewritten with recomputed hashes", func(t *testing.T, p string) { sqlitetest.RewriteTail(t, p, 7) },
			rewritten, []string{"rewritten@12"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agentauth.db")
			h := axStart(t, path, axOptions{auditTable: true})
			for range 12 {
				h.must(t, 200, "uma", "GET", "/api/v2/sessions", "")
			}
			h.stop() // signs a checkpoint of the head (12)
			cps := checkpointSeqs(t, path)
			if len(cps) == 0 || cps[len(cps)-1] != 12 {
				t.Fatalf("checkpoints at %v, want the last at 12", cps)
			}
			tt.tamper(t, path)
			// Each check on its own copy: the service's own records (each
			// verify call is audited) must not fill the truncated tail.
			walkPath := copyDatabase(t, path)

			h = axStart(t, path, axOptions{auditTable: true})
			if got := breakList(h.must(t, 200, "aud", "GET", "/api/v2/audit/verify", "")); !slices.Equal(got, tt.defaultCall) {
				t.Errorf("default verify breaks = %v, want %v", got, tt.defaultCall)
			}
			h.stop()
			// In steps of 4 records; after a truncation, in one step, for
			// the same reason.
			limit := 4
			if tt.name == "truncated tail" {
				limit = 100
			}
			if got, want := verifyWalk(t, axStart(t, walkPath, axOptions{auditTable: true}), limit), tt.walk(cps); !slices.Equal(got, want) {
				t.Errorf("verify walk breaks = %v, want %v (checkpoints at %v)", got, want, cps)
			}
		})
	}
}

func checkpointSeqs(t *testing.T, path string) []int64 {
	t.Helper()
	st, closeStore, err := sqlite.OpenReadOnly(sqlite.Path(path), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	cps, err := st.Checkpoints(t.Context(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, cp := range cps {
		seqs = append(seqs, cp.Seq)
	}
	return seqs
}

// copyDatabase copies the (closed) database at path next to it, so that
// the copy is served with the same signing key.
func copyDatabase(t *testing.T, path string) string {
	t.Helper()
	to := strings.TrimSuffix(path, ".db") + "-copy.db"
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(path + suffix)
		if errors.Is(err, fs.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return to
}
