package hybrid

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// stubCentre answers GET /api/v2/me like a central agentauth: Bearer tokens
// and user_session cookies it knows get their subject and roles, others 401.
// It counts the calls it gets and can be made to misbehave.
type stubCentre struct {
	srv   *httptest.Server
	calls atomic.Int64

	mu    sync.Mutex
	users map[string][]string // credential → roles; subject is "user-"+credential
	// override, when set, answers instead of the normal behaviour.
	override http.HandlerFunc
	// gate, when set, is waited on before answering.
	gate chan struct{}
}

func newStubCentre(t *testing.T, tlsServer bool) *stubCentre {
	t.Helper()
	s := &stubCentre{users: map[string][]string{}}
	h := http.HandlerFunc(s.serve)
	if tlsServer {
		s.srv = httptest.NewTLSServer(h)
	} else {
		s.srv = httptest.NewServer(h)
	}
	t.Cleanup(s.srv.Close)
	return s
}

func (s *stubCentre) set(cred string, roles ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[cred] = append([]string{}, roles...) // never null in JSON
}

func (s *stubCentre) setOverride(h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.override = h
}

func (s *stubCentre) serve(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	s.mu.Lock()
	override, gate := s.override, s.gate
	s.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if override != nil {
		override(w, r)
		return
	}
	if r.Method != http.MethodGet || r.URL.Path != "/api/v2/me" {
		http.NotFound(w, r)
		return
	}
	cred := ""
	if h := r.Header.Get("Authorization"); h != "" {
		cred, _ = strings.CutPrefix(h, "Bearer ")
		cred = "bearer:" + cred
	} else if c, err := r.Cookie("user_session"); err == nil {
		cred = "cookie:" + c.Value
	}
	s.mu.Lock()
	roles, ok := s.users[cred]
	s.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"code":"unauthenticated","message":"credential not accepted"}}`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"subject": "user-" + cred, "roles": roles, "method": "api_key", "role_source": "api key", "permissions": []string{},
	})
}

// The limits a test Authenticator is given unless the test sets its own
// (production's come from config.Defaults).
const (
	testTTL     = 30 * time.Second
	testSize    = 100
	testTimeout = 5 * time.Second
)

func newTestAuthenticator(t testing.TB, cfg Config, clock ports.Clock) *Authenticator {
	t.Helper()
	authz, err := domain.NewAuthorizer([]domain.CustomRole{{Name: "OPERATOR", Extends: domain.RoleUser}})
	if err != nil {
		t.Fatal(err)
	}
	a, cleanup, err := New(cfg, authz, clock, zap.NewNop())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(cleanup)
	return a
}

func bearer(v string) ports.Credential {
	return ports.Credential{Kind: ports.CredentialBearer, Value: v}
}

func TestAuthenticateMapsTheCentresAnswer(t *testing.T) {
	centre := newStubCentre(t, false)
	centre.set("bearer:admin-token", "ADMIN")
	centre.set("bearer:two-roles", "LEAD", "AUDITOR")
	centre.set("bearer:custom", "OPERATOR")
	centre.set("bearer:unknown-role", "SUPERUSER")
	centre.set("bearer:no-roles")
	centre.set("cookie:browser-session", "USER")

	tests := []struct {
		name      string
		cred      ports.Credential
		wantErr   error
		wantRoles []domain.Role
	}{
		{"bearer admin", bearer("admin-token"), nil, []domain.Role{domain.RoleAdmin}},
		{"two roles", bearer("two-roles"), nil, []domain.Role{domain.RoleLead, domain.RoleAuditor}},
		{"custom role known here", bearer("custom"), nil, []domain.Role{"OPERATOR"}},
		{"no roles grants nothing", bearer("no-roles"), nil, []domain.Role{}},
		{"session cookie", ports.Credential{Kind: ports.CredentialCookie, Value: "browser-session"}, nil, []domain.Role{domain.RoleUser}},
		{"rejected by the centre", bearer("nobody"), domain.ErrUnauthenticated, nil},
		{"same value as cookie is another credential", ports.Credential{Kind: ports.CredentialCookie, Value: "admin-token"}, domain.ErrUnauthenticated, nil},
		{"role unknown here", bearer("unknown-role"), domain.ErrUnavailable, nil},
		{"no credential", ports.Credential{}, domain.ErrUnauthenticated, nil},
		{"empty bearer", bearer(""), domain.ErrUnauthenticated, nil},
		{"control character", bearer("admin-token\x00"), domain.ErrUnauthenticated, nil},
		{"cookie with a semicolon", ports.Credential{Kind: ports.CredentialCookie, Value: "a; user_session=browser-session"}, domain.ErrUnauthenticated, nil},
	}
	a := newTestAuthenticator(t, Config{CacheTTL: testTTL, CacheSize: testSize, Timeout: testTimeout, RemoteURL: centre.srv.URL + "/"}, newFakeClock())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := a.Authenticate(context.Background(), tt.cred)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("err: got %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if strings.Contains(err.Error(), tt.cred.Value) && tt.cred.Value != "" {
					t.Errorf("error %q contains the credential", err)
				}
				return
			}
			if !slices.Equal(p.Roles, tt.wantRoles) {
				t.Errorf("roles: got %v, want %v", p.Roles, tt.wantRoles)
			}
			if got, want := p.Method, domain.MethodHybrid; got != want {
				t.Errorf("method: got %q, want %q", got, want)
			}
			if got, want := p.RoleSource, "remote "+centre.srv.URL; got != want {
				t.Errorf("role source: got %q, want %q", got, want)
			}
			if !strings.HasPrefix(p.Subject, "user-") {
				t.Errorf("subject: got %q, want the centre's subject", p.Subject)
			}
		})
	}
}

func TestAuthenticateFailsClosedOnBadAnswers(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		wantErr error
	}{
		{"401", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(401) }, domain.ErrUnauthenticated},
		{"403", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(403) }, domain.ErrUnauthenticated},
		{"500", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }, domain.ErrUnavailable},
		{"502", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(502) }, domain.ErrUnavailable},
		{"404: wrong remote URL", http.NotFound, domain.ErrUnavailable},
		{"429", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(429) }, domain.ErrUnavailable},
		{"redirect is not followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://elsewhere.example/api/v2/me", http.StatusFound)
		}, domain.ErrUnavailable},
		{"malformed JSON", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"subject": "x", "roles": [`)) }, domain.ErrUnavailable},
		{"HTML", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`<html>proxy login</html>`)) }, domain.ErrUnavailable},
		{"roles not an array", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"subject":"x","roles":"ADMIN"}`))
		}, domain.ErrUnavailable},
		{"no roles field", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"subject":"x"}`)) }, domain.ErrUnavailable},
		{"empty subject", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"subject":"","roles":["ADMIN"]}`))
		}, domain.ErrUnavailable},
		{"lower-case role", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"subject":"x","roles":["admin"]}`))
		}, domain.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			centre := newStubCentre(t, false)
			centre.setOverride(tt.handler)
			a := newTestAuthenticator(t, Config{CacheTTL: testTTL, CacheSize: testSize, Timeout: testTimeout, RemoteURL: centre.srv.URL}, newFakeClock())
			p, err := a.Authenticate(context.Background(), bearer("some-token"))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err: got %v, want %v", err, tt.wantErr)
			}
			if p.Subject != "" || len(p.Roles) != 0 {
				t.Errorf("principal on failure: got %+v, want none", p)
			}
			if got := a.cached(); got != 0 {
				t.Errorf("failure cached: got %d entries, want 0", got)
			}
		})
	}
}

func TestAuthenticateTimesOut(t *testing.T) {
	centre := newStubCentre(t, false)
	centre.set("bearer:tok", "ADMIN")
	release := make(chan struct{})
	centre.gate = release
	defer close(release) // lets the stub finish before it is closed
	a := newTestAuthenticator(t, Config{CacheTTL: testTTL, CacheSize: testSize, RemoteURL: centre.srv.URL, Timeout: 50 * time.Millisecond}, newFakeClock())
	_, err := a.Authenticate(context.Background(), bearer("tok"))
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("err: got %v, want %v", err, domain.ErrUnavailable)
	}
}

func TestCacheTTLAndRoleChange(t *testing.T) {
	centre := newStubCentre(t, false)
	centre.set("bearer:tok", "USER")
	clock := newFakeClock()
	ttl := 30 * time.Second
	a := newTestAuthenticator(t, Config{CacheSize: testSize, Timeout: testTimeout, RemoteURL: centre.srv.URL, CacheTTL: ttl}, clock)
	ctx := context.Background()

	steps := []struct {
		name      string
		advance   time.Duration
		setRole   string
		wantRole  domain.Role
		wantCalls int64
	}{
		{"first use asks the centre", 0, "", domain.RoleUser, 1},
		{"cache hit makes no call", time.Second, "", domain.RoleUser, 1},
		{"role changed at the centre, still cached", 0, "ADMIN", domain.RoleUser, 1},
		{"just before the TTL: cached", ttl - time.Second - 1, "", domain.RoleUser, 1},
		{"at the TTL: asks again and sees the change", 1, "", domain.RoleAdmin, 2},
		{"cached again", ttl / 2, "", domain.RoleAdmin, 2},
	}
	for _, s := range steps {
		clock.Advance(s.advance)
		if s.setRole != "" {
			centre.set("bearer:tok", s.setRole)
		}
		p, err := a.Authenticate(ctx, bearer("tok"))
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := p.Roles; len(got) != 1 || got[0] != s.wantRole {
			t.Errorf("%s: roles: got %v, want [%s]", s.name, got, s.wantRole)
		}
		if got := centre.calls.Load(); got != s.wantCalls {
			t.Errorf("%s: calls to the centre: got %d, want %d", s.name, got, s.wantCalls)
		}
	}
}

func TestExpiredEntryNotUsedWhenCentreIsDown(t *testing.T) {
	centre := newStubCentre(t, false)
	centre.set("bearer:tok", "ADMIN")
	clock := newFakeClock()
	a := newTestAuthenticator(t, Config{CacheSize: testSize, Timeout: testTimeout, RemoteURL: centre.srv.URL, CacheTTL: time.Minute}, clock)
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, bearer("tok")); err != nil {
		t.Fatal(err)
	}
	centre.srv.Close()
	if _, err := a.Authenticate(ctx, bearer("tok")); err != nil {
		t.Errorf("fresh entry while the centre is down: got %v, want the cached answer", err)
	}
	clock.Advance(time.Minute)
	p, err := a.Authenticate(ctx, bearer("tok"))
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("expired entry, centre down: got %+v, %v; want %v", p, err, domain.ErrUnavailable)
	}
}

// Concurrent requests with one credential wait for one call to the
// centre. The centre is answered in memory inside a synctest bubble, so
// synctest.Wait tells when every request is waiting, without polling.
func TestConcurrentLookupsShareOneCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		release := make(chan struct{})
		a := newTestAuthenticator(t, Config{RemoteURL: "http://127.0.0.1:1", CacheTTL: time.Minute, CacheSize: 10, Timeout: time.Minute}, newFakeClock())
		a.client.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			<-release
			rec := httptest.NewRecorder()
			_, _ = rec.WriteString(`{"subject":"user-tok","roles":["LEAD"],"method":"api_key"}`)
			return rec.Result(), nil
		})
		const n = 20
		errs := make(chan error, n)
		for range n {
			go func() {
				p, err := a.Authenticate(context.Background(), bearer("tok"))
				if err == nil && !p.Has(domain.RoleLead) {
					err = fmt.Errorf("roles: got %v, want [LEAD]", p.Roles)
				}
				errs <- err
			}()
		}
		synctest.Wait() // every request is waiting: one on the centre, the rest on its call
		close(release)
		for range n {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		if got := calls.Load(); got != 1 {
			t.Errorf("calls to the centre: got %d, want 1", got)
		}
	})
}

// A request that gives up while it waits for a shared call fails with 503;
// the call goes on for the others.
func TestWaiterGivingUpDoesNotFailTheSharedCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		a := newTestAuthenticator(t, Config{RemoteURL: "http://127.0.0.1:1", CacheTTL: time.Minute, CacheSize: 10, Timeout: time.Minute}, newFakeClock())
		a.client.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
			<-release
			return answerAll(r)
		})
		first := make(chan error, 1)
		go func() { _, err := a.Authenticate(context.Background(), bearer("tok")); first <- err }()
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := a.Authenticate(ctx, bearer("tok")); !errors.Is(err, domain.ErrUnavailable) {
			t.Errorf("waiter that gave up: got %v, want %v", err, domain.ErrUnavailable)
		}
		close(release)
		if err := <-first; err != nil {
			t.Errorf("the caller: got %v, want the centre's answer", err)
		}
	})
}

func TestCacheBoundUnderManyCredentials(t *testing.T) {
	centre := newStubCentre(t, false)
	const bound, total = 8, 200
	for i := range total {
		centre.set(fmt.Sprint("bearer:tok-", i), "USER")
	}
	a := newTestAuthenticator(t, Config{CacheTTL: testTTL, Timeout: testTimeout, RemoteURL: centre.srv.URL, CacheSize: bound}, newFakeClock())
	for i := range total {
		if _, err := a.Authenticate(context.Background(), bearer(fmt.Sprint("tok-", i))); err != nil {
			t.Fatal(err)
		}
		if got := a.cached(); got > bound {
			t.Fatalf("after %d credentials: got %d cached, want at most %d", i+1, got, bound)
		}
	}
	if got := a.cached(); got != bound {
		t.Errorf("cached: got %d, want %d", got, bound)
	}
}

func TestCAFile(t *testing.T) {
	centre := newStubCentre(t, true)
	centre.set("bearer:tok", "AUDITOR")
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	cert := centre.srv.Certificate()
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("untrusted without the CA file", func(t *testing.T) {
		a := newTestAuthenticator(t, Config{CacheTTL: testTTL, CacheSize: testSize, Timeout: testTimeout, RemoteURL: centre.srv.URL}, newFakeClock())
		if _, err := a.Authenticate(context.Background(), bearer("tok")); !errors.Is(err, domain.ErrUnavailable) {
			t.Errorf("err: got %v, want %v", err, domain.ErrUnavailable)
		}
	})
	t.Run("trusted with the CA file", func(t *testing.T) {
		a := newTestAuthenticator(t, Config{CacheTTL: testTTL, CacheSize: testSize, Timeout: testTimeout, RemoteURL: centre.srv.URL, CAFile: caFile}, newFakeClock())
		p, err := a.Authenticate(context.Background(), bearer("tok"))
		if err != nil || !p.Has(domain.RoleAuditor) {
			t.Errorf("got %+v, %v; want AUDITOR", p, err)
		}
	})
	for _, bad := range []string{filepath.Join(dir, "missing.pem"), notPEM} {
		t.Run("refused CA file "+filepath.Base(bad), func(t *testing.T) {
			authz, _ := domain.NewAuthorizer(nil)
			if _, _, err := New(Config{CacheTTL: testTTL, CacheSize: testSize, Timeout: testTimeout, RemoteURL: centre.srv.URL, CAFile: bad}, authz, newFakeClock(), zap.NewNop()); err == nil {
				t.Errorf("New: got nil error, want one naming the CA file")
			}
		})
	}
}

// BenchmarkAuthenticateCacheHit measures the hot path: a credential whose
// answer is cached makes no network call.
func BenchmarkAuthenticateCacheHit(b *testing.B) {
	centre := &stubCentre{users: map[string][]string{"bearer:" + strings.Repeat("k", 43): {"ADMIN"}}}
	centre.srv = httptest.NewServer(http.HandlerFunc(centre.serve))
	defer centre.srv.Close()
	authz, _ := domain.NewAuthorizer(nil)
	a, cleanup, err := New(Config{CacheSize: testSize, Timeout: testTimeout, RemoteURL: centre.srv.URL, CacheTTL: time.Hour}, authz, newFakeClock(), zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	defer cleanup()
	cred := bearer(strings.Repeat("k", 43))
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, cred); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := a.Authenticate(ctx, cred); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if got := centre.calls.Load(); got != 1 {
		b.Errorf("calls to the centre: got %d, want 1", got)
	}
}

// BenchmarkAuthenticateCacheHitParallel is the hot path under concurrency:
// many requests with a few credentials share the cache's lock.
func BenchmarkAuthenticateCacheHitParallel(b *testing.B) {
	centre := &stubCentre{users: map[string][]string{}}
	creds := make([]ports.Credential, 16)
	for i := range creds {
		v := fmt.Sprintf("%043d", i)
		centre.users["bearer:"+v] = []string{"USER"}
		creds[i] = bearer(v)
	}
	centre.srv = httptest.NewServer(http.HandlerFunc(centre.serve))
	defer centre.srv.Close()
	authz, _ := domain.NewAuthorizer(nil)
	a, cleanup, err := New(Config{CacheSize: testSize, Timeout: testTimeout, RemoteURL: centre.srv.URL, CacheTTL: time.Hour}, authz, newFakeClock(), zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	defer cleanup()
	ctx := context.Background()
	for _, c := range creds {
		if _, err := a.Authenticate(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := a.Authenticate(ctx, creds[i%len(creds)]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	b.StopTimer()
	if got := centre.calls.Load(); got != int64(len(creds)) {
		b.Errorf("calls to the centre: got %d, want %d", got, len(creds))
	}
}

func TestNewRefusesMissingLimits(t *testing.T) {
	authz, err := domain.NewAuthorizer(nil)
	if err != nil {
		t.Fatal(err)
	}
	ok := Config{RemoteURL: "https://centre.example", CacheTTL: testTTL, CacheSize: testSize, Timeout: testTimeout}
	tests := []struct {
		name string
		edit func(*Config)
	}{
		{"zero cache TTL", func(c *Config) { c.CacheTTL = 0 }},
		{"zero cache size", func(c *Config) { c.CacheSize = 0 }},
		{"zero timeout", func(c *Config) { c.Timeout = 0 }},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			tt.edit(&cfg)
			if _, _, err := New(cfg, authz, newFakeClock(), zap.NewNop()); !errors.Is(err, domain.ErrInvalidInput) {
				t.Errorf("got %v, want %v", err, domain.ErrInvalidInput)
			}
		})
	}
}
