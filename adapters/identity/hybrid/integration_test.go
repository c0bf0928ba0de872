package hybrid_test

// Two real agentauth instances over HTTP on 127.0.0.1, built by the same
// Wire injectors main uses: a central one in debug mode (the four debug keys,
// one per role) and a local one in hybrid mode pointing at it. Where the
// test must change a role at the centre or count the centre's calls, the
// centre is a small stub speaking the same /api/v2/me (debug keys cannot
// change role).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/rest"
	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/wire"
)

type injector func(config.Config, *zap.Logger) (*rest.Server, func(), error)

// instance is one running agentauth.
type instance struct {
	url  string
	stop func()
}

// start runs an injector's server on a fresh 127.0.0.1 port until stop (or
// the end of the test).
func start(t *testing.T, inject injector, edit func(*config.Config)) *instance {
	t.Helper()
	return startOn(t, inject, edit, func(ln net.Listener) net.Listener { return ln })
}

// startOn is start with the listener wrapped by wrap.
func startOn(t *testing.T, inject injector, edit func(*config.Config), wrap func(net.Listener) net.Listener) *instance {
	t.Helper()
	cfg := config.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.Server.ShutdownTimeout = 5 * time.Second
	edit(&cfg)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	srv, cleanup, err := inject(cfg, zap.NewNop())
	if err != nil {
		t.Fatalf("inject: %v", err)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := wrap(raw)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-served; err != nil {
				t.Errorf("serve: %v", err)
			}
			cleanup()
		})
	}
	t.Cleanup(stop)
	return &instance{url: "http://" + raw.Addr().String(), stop: stop}
}

func startCentre(t *testing.T) *instance {
	return start(t, wire.Debug, func(c *config.Config) { c.Auth.Debug = true })
}

// startLocal runs a hybrid instance; size 0 keeps config.Defaults' cache size.
func startLocal(t *testing.T, remote string, ttl time.Duration, size int) *instance {
	return start(t, wire.Hybrid, func(c *config.Config) {
		c.Auth.Hybrid.RemoteURL, c.Auth.Hybrid.CacheTTL = remote, ttl
		if size > 0 {
			c.Auth.Hybrid.CacheSize = size
		}
	})
}

type meBody struct {
	Subject    string   `json:"subject"`
	Roles      []string `json:"roles"`
	Method     string   `json:"method"`
	RoleSource string   `json:"role_source"`
	Error      struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// get sends GET base+path with the header set, and decodes the JSON answer.
func get(t *testing.T, base, path, header, value string) (int, meBody) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if header != "" {
		req.Header.Set(header, value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var me meBody
	if err := json.Unmarshal(body, &me); err != nil {
		t.Fatalf("GET %s: %d, body not JSON: %q", path, resp.StatusCode, body)
	}
	return resp.StatusCode, me
}

func TestHybridAgainstARealCentre(t *testing.T) {
	centre := startCentre(t)
	// A long TTL: nothing in this part may depend on the cache expiring.
	local := startLocal(t, centre.url, time.Hour, 0)
	auth := func(key string) (string, string) { return "Authorization", "Bearer " + key }

	t.Run("each role passes through", func(t *testing.T) {
		tests := []struct {
			key       string
			wantRole  string
			wantAudit int // GET /api/v2/audit needs AUDITOR or ADMIN
		}{
			{"debug-admin", "ADMIN", http.StatusOK},
			{"debug-user", "USER", http.StatusForbidden},
			{"debug-lead", "LEAD", http.StatusForbidden},
			{"debug-auditor", "AUDITOR", http.StatusOK},
		}
		for _, tt := range tests {
			t.Run(tt.key, func(t *testing.T) {
				h, v := auth(tt.key)
				status, me := get(t, local.url, "/api/v2/me", h, v)
				if status != http.StatusOK {
					t.Fatalf("/me: got %d (%s), want 200", status, me.Error.Code)
				}
				if !slices.Equal(me.Roles, []string{tt.wantRole}) {
					t.Errorf("roles: got %v, want [%s]", me.Roles, tt.wantRole)
				}
				if got, want := me.Subject, tt.key; got != want {
					t.Errorf("subject: got %q, want the centre's %q", got, want)
				}
				if got, want := me.Method, "debug"; got != want { // the centre's debug keys stay debug principals
					t.Errorf("method: got %q, want %q", got, want)
				}
				if got, want := me.RoleSource, "remote "+centre.url; got != want {
					t.Errorf("role_source: got %q, want %q", got, want)
				}
				if status, _ := get(t, local.url, "/api/v2/audit", h, v); status != tt.wantAudit {
					t.Errorf("/audit: got %d, want %d", status, tt.wantAudit)
				}
			})
		}
	})

	t.Run("credential the centre rejects", func(t *testing.T) {
		tests := []struct{ name, header, value string }{
			{"unknown key", "Authorization", "Bearer not-a-debug-key"},
			{"unknown session cookie", "Cookie", "user_session=not-a-session"},
			{"no credential", "", ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				status, me := get(t, local.url, "/api/v2/me", tt.header, tt.value)
				if status != http.StatusUnauthorized || me.Error.Code != "unauthenticated" {
					t.Errorf("got %d %q, want 401 unauthenticated", status, me.Error.Code)
				}
			})
		}
	})

	t.Run("centre stopped", func(t *testing.T) {
		centre.stop()
		tests := []struct{ name, key string }{
			{"credential never seen", "never-seen-before"},
			{"debug key never cached", "debug-typo"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				h, v := auth(tt.key)
				status, me := get(t, local.url, "/api/v2/me", h, v)
				if status != http.StatusServiceUnavailable || me.Error.Code != "unavailable" {
					t.Errorf("got %d %q, want 503 unavailable", status, me.Error.Code)
				}
				if !strings.Contains(me.Error.Message, "central agentauth instance") {
					t.Errorf("message: got %q, want it to name the central instance", me.Error.Message)
				}
			})
		}
	})
}

// expiresAtOnce is a cache time every answer has outlived by the next
// request. These tests run the production graph (Wire, the system clock)
// over real HTTP, so neither synctest nor a fake clock reaches the cache;
// the exact TTL boundary is tested with a fake clock in
// TestCacheTTLAndRoleChange and TestExpiredEntryNotUsedWhenCentreIsDown.
const expiresAtOnce = time.Nanosecond

func TestHybridExpiredEntriesUnusedWhenCentreStops(t *testing.T) {
	centre := startCentre(t)
	local := startLocal(t, centre.url, expiresAtOnce, 0)
	if status, _ := get(t, local.url, "/api/v2/me", "Authorization", "Bearer debug-admin"); status != http.StatusOK {
		t.Fatalf("before: got %d, want 200", status)
	}
	centre.stop()
	status, me := get(t, local.url, "/api/v2/me", "Authorization", "Bearer debug-admin")
	if status != http.StatusServiceUnavailable {
		t.Errorf("expired answer, centre down: got %d %v, want 503", status, me.Roles)
	}
}

// stubCentre is a minimal central instance whose roles the test changes.
type stubCentre struct {
	srv   *httptest.Server
	calls atomic.Int64
	mu    sync.Mutex
	roles map[string]string // Bearer token → role
}

func newStubCentre(t *testing.T) *stubCentre {
	s := &stubCentre{roles: map[string]string{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		role, ok := s.roles[tok]
		s.mu.Unlock()
		if r.URL.Path != "/api/v2/me" || !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"subject": "sub-" + tok, "roles": []string{role}})
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *stubCentre) set(tok, role string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roles[tok] = role
}

func TestHybridRoleChangeTakesEffectAfterTheCacheTime(t *testing.T) {
	centre := newStubCentre(t)
	centre.set("tok", "USER")
	local := startLocal(t, centre.srv.URL, expiresAtOnce, 0)
	if _, me := get(t, local.url, "/api/v2/me", "Authorization", "Bearer tok"); !slices.Equal(me.Roles, []string{"USER"}) {
		t.Fatalf("before: got %v, want [USER]", me.Roles)
	}
	centre.set("tok", "ADMIN")
	if status, me := get(t, local.url, "/api/v2/me", "Authorization", "Bearer tok"); status != http.StatusOK || !slices.Equal(me.Roles, []string{"ADMIN"}) {
		t.Errorf("after the cache time: got %d %v, want 200 with [ADMIN]", status, me.Roles)
	}
	if got := centre.calls.Load(); got != 2 {
		t.Errorf("calls to the centre: got %d, want 2", got)
	}
}

func TestHybridCacheStaysBounded(t *testing.T) {
	centre := newStubCentre(t)
	const bound, total = 8, 100
	for i := range total {
		centre.set(fmt.Sprint("tok-", i), "USER")
	}
	local := startLocal(t, centre.srv.URL, time.Hour, bound)
	ask := func(i int) {
		t.Helper()
		if status, _ := get(t, local.url, "/api/v2/me", "Authorization", fmt.Sprint("Bearer tok-", i)); status != http.StatusOK {
			t.Fatalf("tok-%d: got %d, want 200", i, status)
		}
	}
	for i := range total {
		ask(i)
	}
	if got := centre.calls.Load(); got != total {
		t.Fatalf("calls after %d distinct credentials: got %d, want %d", total, got, total)
	}
	// The newest credentials are still cached: no call.
	for i := total - bound; i < total; i++ {
		ask(i)
	}
	if got := centre.calls.Load(); got != total {
		t.Errorf("the %d newest credentials: got %d calls, want none (cached)", bound, got-total)
	}
	// The oldest was evicted to keep the bound: it is asked again.
	ask(0)
	if got := centre.calls.Load(); got != total+1 {
		t.Errorf("the oldest credential: got %d calls, want 1 (evicted)", got-total)
	}
}

func TestHybridUnknownRoleIsRefused(t *testing.T) {
	centre := newStubCentre(t)
	centre.set("tok", "SUPERUSER")
	local := startLocal(t, centre.srv.URL, time.Hour, 0)
	status, me := get(t, local.url, "/api/v2/me", "Authorization", "Bearer tok")
	if status != http.StatusServiceUnavailable || len(me.Roles) != 0 {
		t.Fatalf("got %d %v, want 503 and no roles", status, me.Roles)
	}
	if !strings.Contains(me.Error.Message, "does not know") {
		t.Errorf("message: got %q, want it to say the role is unknown here", me.Error.Message)
	}
}

// publicAddr is a listener on 127.0.0.1 that says it listens on a
// non-loopback address, as a listener on a real interface would.
type publicAddr struct{ net.Listener }

func (publicAddr) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(10, 77, 0, 1), Port: 8080} }

// TestDebugPrincipalsNeverServedOffLoopback: a principal of a debug-mode
// centre (its /me says method "debug", or it marks the answer
// X-Auth-Debug) is served only by an edge whose configured and actual
// listen addresses are both loopback; everywhere else the request is
// refused (503, the deployment is wrong), however the centre is reached.
func TestDebugPrincipalsNeverServedOffLoopback(t *testing.T) {
	centre := startCentre(t)
	hybridTo := func(remote, host string) func(*config.Config) {
		return func(c *config.Config) {
			c.Server.Host = host
			c.Auth.Hybrid.RemoteURL, c.Auth.Hybrid.CacheTTL = remote, time.Hour
		}
	}
	loopbackEdge := start(t, wire.Hybrid, hybridTo(centre.url, "127.0.0.1"))
	stub := newStubCentre(t)
	stub.set("tok", "ADMIN")
	markedStub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Auth-Debug", "true")
		_ = json.NewEncoder(w).Encode(map[string]any{"subject": "debug-admin", "roles": []string{"ADMIN"}, "method": "hybrid"})
	}))
	t.Cleanup(markedStub.Close)
	saysDebugStub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"subject": "debug-admin", "roles": []string{"ADMIN"}, "method": "debug"})
	}))
	t.Cleanup(saysDebugStub.Close)

	tests := []struct {
		name      string
		edge      *instance
		key       string
		wantDebug bool // served, as a debug principal; else refused
	}{
		{"loopback edge, debug centre", loopbackEdge, "debug-admin", true},
		{"edge on all interfaces, debug centre", start(t, wire.Hybrid, hybridTo(centre.url, "0.0.0.0")), "debug-admin", false},
		{"edge on a public address, debug centre", start(t, wire.Hybrid, hybridTo(centre.url, "10.77.0.1")), "debug-auditor", false},
		{"configured loopback but listening elsewhere", startOn(t, wire.Hybrid, hybridTo(centre.url, "127.0.0.1"),
			func(ln net.Listener) net.Listener { return publicAddr{ln} }), "debug-admin", false},
		{"public edge behind a loopback edge", start(t, wire.Hybrid, hybridTo(loopbackEdge.url, "0.0.0.0")), "debug-admin", false},
		{"public edge, centre marks X-Auth-Debug only", start(t, wire.Hybrid, hybridTo(markedStub.URL, "0.0.0.0")), "any", false},
		{"public edge, centre says method debug only", start(t, wire.Hybrid, hybridTo(saysDebugStub.URL, "0.0.0.0")), "any", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/api/v2/me", "/api/v2/audit", "/api/v2/sessions"} {
				req, _ := http.NewRequest(http.MethodGet, tt.edge.url+path, nil)
				req.Header.Set("Authorization", "Bearer "+tt.key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if tt.wantDebug {
					if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Auth-Debug") != "true" {
						t.Errorf("%s: got %d X-Auth-Debug=%q, want 200 marked X-Auth-Debug: true", path, resp.StatusCode, resp.Header.Get("X-Auth-Debug"))
					}
					continue
				}
				if resp.StatusCode != http.StatusServiceUnavailable {
					t.Errorf("%s: got %d %s, want 503: a debug principal served off loopback", path, resp.StatusCode, body)
				}
			}
		})
	}
	// A principal of a normal centre is still served on a public edge.
	public := start(t, wire.Hybrid, hybridTo(stub.srv.URL, "0.0.0.0"))
	if status, me := get(t, public.url, "/api/v2/me", "Authorization", "Bearer tok"); status != http.StatusOK || me.Method != "hybrid" {
		t.Errorf("normal centre on a public edge: got %d method %q, want 200 hybrid", status, me.Method)
	}
}
