package jwks

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// issuer serves a key set the test changes, and counts its fetches.
type issuer struct {
	srv *httptest.Server

	mu      sync.Mutex
	set     jose.JSONWebKeySet
	status  int
	fetches int
}

func newIssuer(t *testing.T, keys ...jose.JSONWebKey) *issuer {
	t.Helper()
	is := &issuer{set: jose.JSONWebKeySet{Keys: keys}, status: http.StatusOK}
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		is.mu.Lock()
		defer is.mu.Unlock()
		is.fetches++
		w.WriteHeader(is.status)
		_ = json.NewEncoder(w).Encode(is.set)
	}))
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) serve(status int, keys ...jose.JSONWebKey) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.status, is.set = status, jose.JSONWebKeySet{Keys: keys}
}

func edKey(t *testing.T, kid string) jose.JSONWebKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return jose.JSONWebKey{Key: pub, KeyID: kid, Algorithm: "EdDSA", Use: "sig"}
}

func ecKey(t *testing.T, kid string) jose.JSONWebKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return jose.JSONWebKey{Key: k, KeyID: kid, Algorithm: "ES256"}
}

// clock is a time the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newCache(t *testing.T, url string, c *clock, maxAge time.Duration) *Cache {
	t.Helper()
	cache, err := New(Config{URL: url, Client: http.DefaultClient, Timeout: 5 * time.Second, MinRefetch: time.Minute, MaxAge: maxAge, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return cache
}

func TestOnlyPublicAsymmetricSigningKeysAreKept(t *testing.T) {
	ec := ecKey(t, "private") // a private key published by mistake
	pubEC := ecKey(t, "ec")
	pubEC.Key = &pubEC.Key.(*ecdsa.PrivateKey).PublicKey
	hmacAlg := edKey(t, "claims-hs256")
	hmacAlg.Algorithm = "HS256"
	enc := edKey(t, "enc")
	enc.Use = "enc"
	is := newIssuer(t,
		edKey(t, "ed"), pubEC,
		jose.JSONWebKey{Key: []byte("0123456789abcdef0123456789abcdef"), KeyID: "oct", Algorithm: "HS256"},
		ec, hmacAlg, enc)
	c := newCache(t, is.srv.URL, &clock{now: time.Now()}, 0)
	if err := c.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := c.KeyIDs(), []string{"ed", "ec"}; !slices.Equal(got, want) {
		t.Errorf("kept keys: got %v, want %v", got, want)
	}
}

func TestUnknownKeyIDRefetchIsRateLimited(t *testing.T) {
	is := newIssuer(t, edKey(t, "a"))
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := newCache(t, is.srv.URL, clk, 0)
	ctx := t.Context()
	steps := []struct {
		name        string
		advance     time.Duration
		kid         string
		wantKeys    int
		wantFetches int
	}{
		{"first lookup fetches", 0, "a", 1, 1},
		{"known key: no fetch", time.Hour, "a", 1, 1},
		{"unknown key after the interval: one fetch", 0, "made-up", 0, 2},
		{"unknown keys within the interval: none", time.Second, "made-up-2", 0, 2},
		{"again within the interval: none", time.Second, "made-up-3", 0, 2},
		{"after the interval: one more", time.Minute, "made-up-4", 0, 3},
	}
	for _, s := range steps {
		clk.advance(s.advance)
		keys, err := c.Lookup(ctx, s.kid)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if len(keys) != s.wantKeys || c.fetchCount() != s.wantFetches {
			t.Errorf("%s: got %d keys after %d fetches, want %d after %d", s.name, len(keys), c.fetchCount(), s.wantKeys, s.wantFetches)
		}
	}
}

func TestCachedKeysServeWhileTheIssuerIsDown(t *testing.T) {
	is := newIssuer(t, edKey(t, "a"))
	clk := &clock{now: time.Now()}
	c := newCache(t, is.srv.URL, clk, 0)
	if _, err := c.Lookup(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	is.serve(http.StatusServiceUnavailable)
	clk.advance(time.Hour)
	if keys, err := c.Lookup(t.Context(), "a"); err != nil || len(keys) != 1 {
		t.Errorf("known key, issuer down: got %d keys, %v; want the cached key", len(keys), err)
	}
	if _, err := c.Lookup(t.Context(), "b"); err == nil {
		t.Errorf("unknown key, issuer down: got no error, want the fetch's")
	}
}

func TestOldSetIsNotUsedPastMaxAge(t *testing.T) {
	is := newIssuer(t, edKey(t, "a"))
	clk := &clock{now: time.Now()}
	c := newCache(t, is.srv.URL, clk, 10*time.Minute)
	if _, err := c.Lookup(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	// The issuer withdraws key a and then cannot be reached.
	is.serve(http.StatusOK, edKey(t, "b"))
	clk.advance(10 * time.Minute)
	if keys, err := c.Lookup(t.Context(), "a"); err != nil || len(keys) != 0 {
		t.Errorf("withdrawn key past max age: got %d keys, %v; want none", len(keys), err)
	}
	is.serve(http.StatusServiceUnavailable)
	clk.advance(10 * time.Minute)
	if _, err := c.Lookup(t.Context(), "b"); err == nil {
		t.Errorf("set past max age, issuer down: got no error, want one (fail closed)")
	}
}

func TestNewRefusesIncompleteSettings(t *testing.T) {
	ok := Config{Client: http.DefaultClient, Timeout: time.Second, MinRefetch: time.Second}
	tests := []struct {
		name string
		edit func(*Config)
	}{
		{"no client", func(c *Config) { c.Client = nil }},
		{"no timeout", func(c *Config) { c.Timeout = 0 }},
		{"no refetch interval", func(c *Config) { c.MinRefetch = 0 }},
		{"negative max age", func(c *Config) { c.MaxAge = -1 }},
	}
	if _, err := New(ok); err != nil {
		t.Fatalf("complete settings: %v", err)
	}
	for _, tt := range tests {
		cfg := ok
		tt.edit(&cfg)
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: got no error", tt.name)
		}
	}
}

func TestCallerGivingUpDoesNotFailTheSharedFetch(t *testing.T) {
	is := newIssuer(t, edKey(t, "a"))
	c := newCache(t, is.srv.URL, &clock{now: time.Now()}, 0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c.Refresh(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled caller: got %v, want nil or context.Canceled", err)
	}
	if keys, err := c.Lookup(t.Context(), "a"); err != nil || len(keys) != 1 {
		t.Errorf("after a cancelled caller: got %d keys, %v; want 1", len(keys), err)
	}
}
