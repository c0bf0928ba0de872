package keycloak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentauth/agentauth/adapters/telemetry"
)

// keySet is the provider's JWKS, cached. An unknown key id triggers a
// refetch at most once per minInterval, so a flood of tokens with made-up
// key ids cannot turn into a flood of requests to the provider; when the
// JWKS endpoint is down the cached keys keep verifying.
type keySet struct {
	http        *http.Client
	minInterval time.Duration
	now         func() time.Time

	mu        sync.RWMutex
	url       string
	algs      []jose.SignatureAlgorithm
	keys      []jose.JSONWebKey
	lastFetch time.Time // of the last attempt, successful or not

	fetchMu sync.Mutex // one fetch at a time
	fetches int        // for tests
}

func newKeySet(c *http.Client, minInterval time.Duration, now func() time.Time) *keySet {
	return &keySet{http: c, minInterval: minInterval, now: now}
}

func (k *keySet) configure(url string, algs []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.url = url
	k.algs = k.algs[:0]
	for _, a := range algs {
		k.algs = append(k.algs, jose.SignatureAlgorithm(a))
	}
}

func (k *keySet) allowed() []jose.SignatureAlgorithm {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.algs
}

func (k *keySet) kids() []string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	out := make([]string, 0, len(k.keys))
	for _, key := range k.keys {
		out = append(out, key.KeyID)
	}
	return out
}

// VerifySignature implements oidc.KeySet.
func (k *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw, k.allowed())
	if err != nil {
		return nil, fmt.Errorf("malformed or disallowed JWS: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("want exactly one signature")
	}
	kid := jws.Signatures[0].Header.KeyID
	if payload, ok := k.verifyCached(jws, kid); ok {
		return payload, nil
	}
	// Unknown key id (or no key verified it): refetch, rate-limited.
	if err := k.refetch(ctx); err != nil {
		return nil, fmt.Errorf("no cached key verifies the token and the JWKS could not be refetched: %w", err)
	}
	if payload, ok := k.verifyCached(jws, kid); ok {
		return payload, nil
	}
	return nil, errors.New("no key of the provider's JWKS verifies the signature")
}

func (k *keySet) verifyCached(jws *jose.JSONWebSignature, kid string) ([]byte, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	for i := range k.keys {
		key := &k.keys[i]
		if kid != "" && key.KeyID != kid {
			continue
		}
		if payload, err := jws.Verify(key); err == nil {
			return payload, true
		}
	}
	return nil, false
}

var errTooSoon = errors.New("JWKS refetched less than the minimum interval ago")

// refetch fetches the JWKS unless it was attempted less than minInterval ago.
func (k *keySet) refetch(ctx context.Context) error {
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	k.mu.RLock()
	last := k.lastFetch
	k.mu.RUnlock()
	if !last.IsZero() && k.now().Sub(last) < k.minInterval {
		return errTooSoon
	}
	return k.fetchLocked(ctx)
}

// refresh fetches the JWKS now (at discovery).
func (k *keySet) refresh(ctx context.Context) error {
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	return k.fetchLocked(ctx)
}

func (k *keySet) fetchLocked(ctx context.Context) (err error) {
	defer func() { telemetry.JWKSRefreshed(err); telemetry.IdPCalled(telemetry.IdPJWKS, outcomeOf(err)) }()
	k.mu.Lock()
	k.lastFetch = k.now()
	url := k.url
	k.fetches++
	k.mu.Unlock()
	if url == "" {
		return errors.New("provider not discovered yet")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := k.http.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %s", url, resp.Status)
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	var keys []jose.JSONWebKey
	for _, key := range set.Keys {
		// Only public signing keys: a symmetric key in a JWKS would let
		// anyone who reads it sign tokens.
		if key.Use == "enc" || !key.Valid() || !key.IsPublic() {
			continue
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return fmt.Errorf("GET %s: no public signing key", url)
	}
	k.mu.Lock()
	k.keys = keys
	k.mu.Unlock()
	return nil
}
