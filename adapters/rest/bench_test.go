package rest_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/adapters/rest"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports/porttest"
)

// benchServer serves on an in-memory listener, so the figures are the
// server's own cost without the kernel's loopback.
func benchServer(b *testing.B) (*fasthttp.Client, *rest.SQLite, *app.APIKeys) {
	b.Helper()
	return benchServerAt(b, filepath.Join(b.TempDir(), "bench.db"))
}

// benchServerAt is benchServer on the database file path.
func benchServerAt(b *testing.B, path string) (*fasthttp.Client, *rest.SQLite, *app.APIKeys) {
	b.Helper()
	log := zap.NewNop()
	store, closeStore, err := rest.OpenSQLite(path, log)
	if err != nil {
		b.Fatal(err)
	}
	audit, closeAudit := auditlog.New(store, auditlog.Options{}, log)
	authz, _ := domain.NewAuthorizer(nil)
	keys, err := app.NewAPIKeys(app.APIKeysConfig{MaxTTL: time.Hour, MaxPerOwner: 5}, store, store, authz, app.SystemClock{})
	if err != nil {
		b.Fatal(err)
	}
	hub, stopHub := app.NewWatchHub(store)
	stopKeys := keys.KeepInMemory(hub)
	srv, err := rest.New(rest.Config{ShutdownTimeout: time.Second}, app.NewApplication(app.Dependencies{Stores: store.Stores(), Authenticator: testKeyring(), Authorizer: authz,
		AuditLog: audit, Clock: app.SystemClock{}, Keys: keys}), log)
	if err != nil {
		b.Fatal(err)
	}
	ln := fasthttputil.NewInmemoryListener()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	b.Cleanup(func() {
		cancel()
		<-done
		stopKeys()
		stopHub()
		closeAudit()
		closeStore()
	})
	return &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }, MaxConnsPerHost: 1024}, store, keys
}

func benchGet(b *testing.B, path, key string, sessions int) {
	client, store, keys := benchServer(b)
	if key == managedKey {
		made, err := keys.Create(porttest.Context(b), domain.Principal{Subject: "admin", Roles: []domain.Role{domain.RoleAdmin}},
			app.KeyRequest{Name: "bench", ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			b.Fatal(err)
		}
		key = made.Secret
	}
	for i := range sessions {
		s := domain.Session{ID: fmt.Sprintf("sess_%02d", i), Owner: "admin", Title: "bench", Mode: domain.ModeAuto,
			State: domain.SessionActive, CreatedAt: time.Now().UTC()}
		if err := store.CreateSession(porttest.Context(b), s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.SetParallelism(32) // 64 concurrent requests on 2 cores, as the load run
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://agentauth" + path)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		for pb.Next() {
			if err := client.Do(req, res); err != nil || res.StatusCode() != 200 {
				b.Errorf("GET %s: %v %d", path, err, res.StatusCode())
				return
			}
		}
	})
}

func BenchmarkHealth(b *testing.B) { benchGet(b, "/health", "", 0) }
func BenchmarkMe(b *testing.B)     { benchGet(b, "/api/v2/me", keyAdmin, 0) }

// managedKey asks benchGet for a managed key of the ADMIN, with all of its
// permissions, made before the clock starts.
const managedKey = "managed"

func BenchmarkMeManagedKey(b *testing.B)   { benchGet(b, "/api/v2/me", managedKey, 0) }
func BenchmarkListSessions(b *testing.B)   { benchGet(b, "/api/v2/sessions", keyAdmin, 0) }
func BenchmarkListSessions20(b *testing.B) { benchGet(b, "/api/v2/sessions", keyAdmin, 20) }
