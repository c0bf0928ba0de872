package rest

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
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
