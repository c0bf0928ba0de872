package agentverify_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentauth/agentauth/adapters/agenttoken"
	"github.com/agentauth/agentauth/agentverify"
)

// watchdog bounds how long a test waits for something that, when the code
// is right, happens at once: it turns a deadlock into a failure instead of
// a hung test run. No pass depends on it.
const watchdog = 30 * time.Second

// A JWKS fetch for an unknown key id that the issuer is slow to answer must
// not hold up verifications with keys already known.
func TestRemoteKeysSlowFetchDoesNotBlockKnownKeys(t *testing.T) {
	sg := newSigner(t, agenttoken.Settings{})
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fetches.Add(1) > 1 { // every fetch after the first hangs until released
			arrived <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		_ = json.NewEncoder(w).Encode(sg.JWKS())
	}))
	defer srv.Close()
	defer close(release)
	var clock atomic.Int64 // the keys' clock, in seconds after issue
	issued := time.Now()
	now := func() time.Time { return issued.Add(time.Duration(clock.Load()) * time.Second) }
	v, err := agentverify.New(issuer, "fs", agentverify.NewRemoteKeysAt(srv.URL, srv.Client(), time.Minute, now), agentverify.WithClock(func() time.Time { return issued }))
	if err != nil {
		t.Fatal(err)
	}
	known := sign(t, sg, grant(issued))
	if _, err := v.Verify(t.Context(), known); err != nil {
		t.Fatal(err)
	}
	clock.Store(61) // an unknown key id may fetch again; the set is still current
	unknown := sign(t, newSigner(t, agenttoken.Settings{}), grant(issued))
	go func() { _, _ = v.Verify(context.Background(), unknown) }()
	<-arrived // the fetch for the unknown key is in flight

	done := make(chan error, 1)
	go func() { _, err := v.Verify(context.Background(), known); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("known key during a fetch: %v", err)
		}
	case <-time.After(watchdog):
		t.Fatal("a verification with a known key waited for the JWKS fetch of an unknown one")
	}
}

// hangingTransport answers no request: each waits until its context ends.
type hangingTransport struct{}

func (hangingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// An issuer that never answers costs a verification a bounded time, even
// with a client that has no timeout of its own (http.DefaultClient has
// none); the verifier then refuses with token_keys_unavailable.
func TestRemoteKeysHangingIssuerTimesOut(t *testing.T) {
	sg := newSigner(t, agenttoken.Settings{})
	issued := time.Now()
	tok := sign(t, sg, grant(issued))
	synctest.Test(t, func(t *testing.T) {
		keys := agentverify.NewRemoteKeys("http://issuer.test/jwks", &http.Client{Transport: hangingTransport{}}, time.Minute)
		v, err := agentverify.New(issuer, "fs", keys, agentverify.WithClock(func() time.Time { return issued }))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = v.Verify(context.Background(), tok)
		var ve *agentverify.Error
		if !errors.As(err, &ve) || ve.Code != agentverify.ReasonKeysNotKnown {
			t.Fatalf("got %v, want %s", err, agentverify.ReasonKeysNotKnown)
		}
		if waited := time.Since(start); waited != agentverify.FetchTimeout {
			t.Errorf("waited %s (bubble time), want FetchTimeout %s", waited, agentverify.FetchTimeout)
		}
	})
}

// Concurrent verifications that all need a fetch share one.
func TestRemoteKeysConcurrentFetchesShareOne(t *testing.T) {
	sg := newSigner(t, agenttoken.Settings{})
	issued := time.Now()
	tok := sign(t, sg, grant(issued))
	synctest.Test(t, func(t *testing.T) {
		var fetches atomic.Int32
		release := make(chan struct{})
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			fetches.Add(1)
			<-release
			rec := httptest.NewRecorder()
			_ = json.NewEncoder(rec).Encode(sg.JWKS())
			return rec.Result(), nil
		})
		v, err := agentverify.New(issuer, "fs", agentverify.NewRemoteKeys("http://issuer.test/jwks", &http.Client{Transport: rt}, time.Minute),
			agentverify.WithClock(func() time.Time { return issued }))
		if err != nil {
			t.Fatal(err)
		}
		const n = 10
		errs := make(chan error, n)
		for range n {
			go func() { _, err := v.Verify(context.Background(), tok); errs <- err }()
		}
		synctest.Wait() // every verification waits for the key set
		close(release)
		for range n {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		if got := fetches.Load(); got != 1 {
			t.Errorf("fetches: got %d, want 1", got)
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
