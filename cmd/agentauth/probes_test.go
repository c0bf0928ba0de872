package main

import (
	"encoding/json"

	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"

	"github.com/agentauth/agentauth/internal/testwait"
)

// tcpProxy forwards a free port of 127.0.0.1 to target until down, which
// closes the listener and every connection: to a client, the database
// refuses connections as if it had stopped. up listens again on the same
// port.
type tcpProxy struct {
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	p := &tcpProxy{target: target, addr: "127.0.0.1:0"}
	p.up(t)
	p.addr = p.ln.Addr().String()
	t.Cleanup(p.down)
	return p
}

func (p *tcpProxy) up(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
}

func (p *tcpProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// health is a probe's answer.
type health struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
}

func probe(t *testing.T, u string) (int, health) {
	t.Helper()
	status, _, body := get(t, u, "")
	var h health
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatalf("GET %s: %d %q: %v", u, status, body, err)
	}
	return status, h
}

// eventually polls GET u until its status is want (probe results are
// reused for a second, and the pool notices a dead server on use).
func eventually(t *testing.T, u string, want int) health {
	t.Helper()
	var h health
	testwait.Until(t, time.Minute, fmt.Sprintf("GET %s answered %d", u, want), func() (bool, string) {
		var status int
		status, h = probe(t, u)
		return status == want, fmt.Sprintf("%d %+v", status, h)
	})
	return h
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestProbesWithPostgreSQLDown: with PostgreSQL gone, the API port's
// /health stays 200 (liveness) and names the database as not ready, the
// management listener's readiness answers 503 naming the failing check,
// requests that need the database fail, and readiness comes back with the
// database; neither probe needs a credential.
func TestProbesWithPostgreSQLDown(t *testing.T) {
	dbURL := pgtest.URL(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newTCPProxy(t, u.Host)
	u.Host = proxy.addr
	const key = "probe-test-key-0123456789"
	mgmt := fmt.Sprintf("http://127.0.0.1:%d", freeTCPPort(t))
	p := start(t, baseEnv(t.TempDir(), "SERVICE_API_KEY="+key, "SERVICE_DATABASE_URL="+u.String(), pgAuditKey, pgAgentKey,
		"SERVICE_MANAGEMENT_PORT="+strings.TrimPrefix(mgmt, "http://127.0.0.1:")), "serve")

	if status, h := probe(t, mgmt+"/health/ready"); status != 200 || h.Status != "ok" || h.Checks["database"] != "ok" || h.Checks["audit_log"] != "ok" {
		t.Fatalf("/health/ready with the database up: %d %+v", status, h)
	}
	if status, h := probe(t, p.URL+"/health"); status != 200 || h.Status != "ok" || h.Checks != nil {
		t.Errorf("/health with the database up: %d %+v, want 200 {\"status\":\"ok\"}", status, h)
	}

	proxy.down()
	h := eventually(t, mgmt+"/health/ready", 503)
	if h.Status != "degraded" || !strings.HasPrefix(h.Checks["database"], "failing: ") {
		t.Errorf("/health/ready with the database down: %+v, want degraded with database failing: <reason>", h)
	}
	if status, h := probe(t, p.URL+"/health"); status != 200 || h.Status != "degraded" || h.Checks["database"] != "failing" {
		t.Errorf("/health with the database down: %d %+v, want 200 degraded naming the database without details", status, h)
	}
	if status, h := probe(t, mgmt+"/health/live"); status != 200 || h.Status != "ok" {
		t.Errorf("/health/live with the database down: %d %+v, want 200 ok", status, h)
	}
	if status, _, body := get(t, p.URL+"/api/v2/me", key); status != 503 {
		t.Errorf("/api/v2/me with the database down: %d %s, want 503", status, body)
	}

	proxy.up(t)
	h = eventually(t, mgmt+"/health/ready", 200)
	if h.Checks["database"] != "ok" || h.Checks["audit_log"] != "ok" {
		t.Errorf("/health/ready after the database came back: %+v", h)
	}
	if status, _, body := get(t, p.URL+"/api/v2/me", key); status != 200 {
		t.Errorf("/api/v2/me after the database came back: %d %s", status, body)
	}
	if code := stop(t, p); code != 0 {
		t.Errorf("exit %d\n%s", code, p.Stderr())
	}
}
