package hybrid

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// roundTripFunc answers the Authenticator's calls in memory.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// answerAll is a centre that knows every credential as a USER, without a
// network, so benchmarks measure this package and not the loopback.
func answerAll(*http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", "application/json")
	_, _ = rec.WriteString(`{"subject":"u","roles":["USER"],"method":"api_key"}`)
	return rec.Result(), nil
}

func benchAuthenticator(b *testing.B, size int) *Authenticator {
	a := newTestAuthenticator(b, Config{RemoteURL: "http://127.0.0.1:1", CacheTTL: testTTL, CacheSize: size, Timeout: testTimeout}, newFakeClock())
	a.client.Transport = roundTripFunc(answerAll)
	return a
}

// BenchmarkAuthenticateCacheMiss asks for a new credential each time in a full cache:
// one call to the (in-memory) centre, a put and an eviction.
func BenchmarkAuthenticateCacheMiss(b *testing.B) {
	a := benchAuthenticator(b, 1000)
	ctx := context.Background()
	creds := make([]string, 1<<16)
	for i := range creds {
		creds[i] = fmt.Sprint("tok-", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := a.Authenticate(ctx, bearer(creds[i%len(creds)])); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
