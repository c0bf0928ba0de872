package rest_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/ports"
)

// TestRequestSmugglingRefused: a request whose body framing is ambiguous
// (RFC 9112 §6.1: Content-Length together with Transfer-Encoding, a
// Transfer-Encoding whose last coding is not chunked, or two different
// Content-Length values) is answered 400 and the connection is closed, so
// a request hidden in its body never runs. Sent over a raw TCP connection.
func TestRequestSmugglingRefused(t *testing.T) {
	const hidden = "GET /api/v2/sessions?smuggled=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + keyAdmin + "\r\n\r\n"
	chunkedThenHidden := "0\r\n\r\n" + hidden
	tests := []struct {
		name    string
		headers string
		body    string
	}{
		{"Content-Length then chunked", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", chunkedThenHidden},
		{"chunked then Content-Length", "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", chunkedThenHidden},
		{"Content-Length with chunked in another case", "content-length: 5\r\ntransfer-encoding: Chunked\r\n", chunkedThenHidden},
		{"Content-Length with gzip, chunked", "Content-Length: 5\r\nTransfer-Encoding: gzip, chunked\r\n", chunkedThenHidden},
		{"chunked is not the last coding", "Transfer-Encoding: chunked, gzip\r\n", chunkedThenHidden},
		{"an unknown coding", "Transfer-Encoding: xchunked\r\n", chunkedThenHidden},
		{"two different Content-Length values", "Content-Length: 0\r\nContent-Length: 73\r\n", hidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, options{})
			conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			req := "POST /api/v2/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + keyUser + "\r\n" + tt.headers + "\r\n" + tt.body
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no response: %v", err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusBadRequest {
				t.Errorf("status = %d, want 400", res.StatusCode)
			}
			if second, err := http.ReadResponse(br, nil); err == nil {
				t.Errorf("a second response (%d) came on the connection: the hidden request ran", second.StatusCode)
			}
			recs, err := h.store.QueryAudit(context.Background(), ports.AuditQuery{Limit: 500})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if r.Path == "/api/v2/sessions" && r.Subject == "admin" {
					t.Errorf("the hidden request ran: audit record %+v", r)
				}
			}
		})
	}
	// An ordinary chunked request and an ordinary Content-Length one still work.
	h := start(t, options{})
	for _, framing := range []string{"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", "Content-Length: 2\r\n\r\n{}"} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(conn, "POST /api/v2/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer "+keyUser+"\r\n"+framing)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		conn.Close()
		if err != nil || res.StatusCode != http.StatusCreated {
			t.Errorf("%q: got %v %v, want 201", framing, res, err)
		}
	}
}
