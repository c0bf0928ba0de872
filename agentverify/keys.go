package agentverify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// StaticKeys is a key set known in advance (a JWKS document read once).
type StaticKeys jose.JSONWebKeySet

// Key returns the key with that id, if the set holds it.
func (s StaticKeys) Key(_ context.Context, kid string) (*jose.JSONWebKey, error) {
	return findKey(s.Keys, kid), nil
}

func findKey(keys []jose.JSONWebKey, kid string) *jose.JSONWebKey {
	for i := range keys {
		if keys[i].KeyID == kid && keys[i].Algorithm == string(Algorithm) && keys[i].Valid() && keys[i].IsPublic() {
			return &keys[i]
		}
	}
	return nil
}

// RemoteKeys fetches the issuer's JWKS over HTTP and keeps it; an unknown
// key id fetches it again, at most once per refetch interval, so that a
// flood of made-up key ids cannot make the tool server flood agentauth. A
// set older than staleAfter refetches intervals is fetched again before
// use, so a key agentauth withdrew (rotated out past its overlap) stops
// verifying here too.
type RemoteKeys struct {
	url     string
	client  *http.Client
	refetch time.Duration

	mu      sync.Mutex
	keys    []jose.JSONWebKey
	fetched time.Time
}

// NewRemoteKeys reads the JWKS at url (agentauth's management listener
// serves it at /.well-known/jwks.json) with client (http.DefaultClient when
// nil), fetching again for an unknown key id at most once per refetch.
func NewRemoteKeys(url string, client *http.Client, refetch time.Duration) *RemoteKeys {
	if client == nil {
		client = http.DefaultClient
	}
	return &RemoteKeys{url: url, client: client, refetch: refetch}
}

// maxJWKS bounds the key set document.
const maxJWKS = 1 << 20

// staleAfter is how many refetch intervals a fetched set is used for.
const staleAfter = 10

// Key returns the key with that id, fetching the set when it is unknown
// and the last fetch is older than the refetch interval.
func (r *RemoteKeys) Key(ctx context.Context, kid string) (*jose.JSONWebKey, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.fetched.IsZero() && time.Since(r.fetched) >= staleAfter*r.refetch {
		if err := r.fetch(ctx); err != nil {
			return nil, err
		}
	}
	if k := findKey(r.keys, kid); k != nil {
		return k, nil
	}
	if !r.fetched.IsZero() && time.Since(r.fetched) < r.refetch {
		return nil, nil
	}
	if err := r.fetch(ctx); err != nil {
		return nil, err
	}
	return findKey(r.keys, kid), nil
}

func (r *RemoteKeys) fetch(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", r.url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch %s: status %d", r.url, resp.StatusCode)
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJWKS)).Decode(&set); err != nil {
		return fmt.Errorf("read %s: %w", r.url, err)
	}
	// A set fetched replaces the old one: a key withdrawn (rotated out
	// past its overlap) stops verifying.
	r.keys, r.fetched = set.Keys, time.Now()
	return nil
}
