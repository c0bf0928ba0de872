// Package jwks caches one issuer's JSON Web Key Set for signature checks:
// the Keycloak/OIDC adapter's and agentverify's. Readers never wait for a
// fetch (the set is swapped atomically); a fetch has a deadline of its own,
// whatever client it is given; concurrent callers share one fetch; a key id
// the set does not hold refetches at most once per interval, so a flood of
// tokens with made-up key ids cannot become a flood of requests; and only
// public keys of asymmetric algorithms are kept, since a symmetric key
// published in a JWKS would let anyone who reads it sign tokens.
package jwks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"golang.org/x/sync/singleflight"
)

// Algorithms are the signature algorithms a key may name: never "none",
// never an HMAC.
var Algorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// ErrTooSoon is a refetch refused because the last attempt is less than
// Config.MinRefetch old.
var ErrTooSoon = errors.New("jwks: refetched less than the minimum interval ago")

// maxDocument bounds a key set document.
const maxDocument = 1 << 20

// Config is a cache's settings; every duration must be positive but MaxAge.
type Config struct {
	// URL is the key set's address; empty until SetURL (a provider's is
	// known after discovery).
	URL string
	// Client makes the requests.
	Client *http.Client
	// Timeout bounds one fetch, whether or not Client has a timeout.
	Timeout time.Duration
	// MinRefetch is the least time between two fetches caused by an
	// unknown key id.
	MinRefetch time.Duration
	// MaxAge, when positive, is how long a fetched set is used before it
	// is fetched again, so a key the issuer withdrew stops verifying.
	MaxAge time.Duration
	// Now tells the time; nil: time.Now.
	Now func() time.Time
	// Fetched, when set, is told the outcome of every fetch (telemetry).
	Fetched func(error)
}

// Cache is one key set, safe for concurrent use.
type Cache struct {
	cfg   Config
	url   atomic.Pointer[string]
	set   atomic.Pointer[snapshot]
	group singleflight.Group

	mu        sync.Mutex
	lastTry   time.Time // of the last fetch attempt, successful or not
	lastError error     // of the last attempt
	fetches   int
}

// snapshot is a fetched set; it is never changed once stored.
type snapshot struct {
	keys    []jose.JSONWebKey
	fetched time.Time
}

// New returns an empty cache; the first Lookup or Refresh fetches.
func New(cfg Config) (*Cache, error) {
	var errs []error
	if cfg.Client == nil {
		errs = append(errs, errors.New("a client is required"))
	}
	if cfg.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("fetch timeout %s is not positive", cfg.Timeout))
	}
	if cfg.MinRefetch <= 0 {
		errs = append(errs, fmt.Errorf("refetch interval %s is not positive", cfg.MinRefetch))
	}
	if cfg.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("max age %s is negative", cfg.MaxAge))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Cache{cfg: cfg}
	c.SetURL(cfg.URL)
	return c, nil
}

// SetURL points the cache at another key set; the keys held stay until the
// next fetch.
func (c *Cache) SetURL(url string) { c.url.Store(&url) }

// Keys returns the cached keys with id kid, or every cached key when kid
// is empty, without fetching.
func (c *Cache) Keys(kid string) []jose.JSONWebKey {
	s := c.set.Load()
	if s == nil {
		return nil
	}
	if kid == "" {
		return s.keys
	}
	var out []jose.JSONWebKey
	for _, k := range s.keys {
		if k.KeyID == kid {
			out = append(out, k)
		}
	}
	return out
}

// KeyIDs lists the ids of the cached keys.
func (c *Cache) KeyIDs() []string {
	var ids []string
	for _, k := range c.Keys("") {
		ids = append(ids, k.KeyID)
	}
	return ids
}

// Lookup returns the keys with id kid (every key when kid is empty). A set
// older than MaxAge, or one without kid, is refetched first, at most once
// per MinRefetch. It returns no keys and no error for an id the issuer does
// not list; an error when the set is unknown or too old and cannot be
// fetched.
func (c *Cache) Lookup(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	if c.stale() {
		err := c.Refetch(ctx)
		if errors.Is(err, ErrTooSoon) { // fetched meanwhile, or failed lately
			err = c.lastErr()
		}
		if err != nil {
			return nil, fmt.Errorf("jwks: no current key set: %w", err)
		}
	}
	if keys := c.Keys(kid); len(keys) > 0 {
		return keys, nil
	}
	if err := c.Refetch(ctx); err != nil && !errors.Is(err, ErrTooSoon) {
		return nil, err
	}
	// Whether this call fetched or another did meanwhile, the set is as
	// fresh as the interval allows.
	return c.Keys(kid), nil
}

// stale reports whether there is no set, or one older than MaxAge.
func (c *Cache) stale() bool {
	s := c.set.Load()
	return s == nil || (c.cfg.MaxAge > 0 && c.cfg.Now().Sub(s.fetched) >= c.cfg.MaxAge)
}

func (c *Cache) lastErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastError
}

// Refetch fetches the set unless the last attempt is less than MinRefetch
// old (ErrTooSoon). Callers arriving while a fetch is in flight share it.
func (c *Cache) Refetch(ctx context.Context) error {
	return c.shared(ctx, func() error {
		c.mu.Lock()
		if !c.lastTry.IsZero() && c.cfg.Now().Sub(c.lastTry) < c.cfg.MinRefetch {
			c.mu.Unlock()
			return ErrTooSoon
		}
		c.mu.Unlock()
		return c.fetch()
	})
}

// Refresh fetches the set now, whatever the interval (at discovery), or
// shares a fetch in flight.
func (c *Cache) Refresh(ctx context.Context) error {
	for {
		// ErrTooSoon: this call joined a refetch that was refused; the
		// next one runs this call's fetch.
		if err := c.shared(ctx, c.fetch); !errors.Is(err, ErrTooSoon) {
			return err
		}
	}
}

// shared runs fetch, or joins the fetch in flight: callers that arrive
// meanwhile share its outcome. The fetch outlives a caller that gives up
// (it is bounded by Timeout), so one caller's cancelled context does not
// fail the others.
func (c *Cache) shared(ctx context.Context, fetch func() error) error {
	ch := c.group.DoChan("fetch", func() (any, error) { return nil, fetch() })
	select {
	case r := <-ch:
		return r.Err
	case <-ctx.Done():
		return fmt.Errorf("jwks: waiting for the key set: %w", ctx.Err())
	}
}

// fetchCount counts the fetch attempts so far, for tests.
func (c *Cache) fetchCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fetches
}

func (c *Cache) fetch() (err error) {
	if c.cfg.Fetched != nil {
		defer func() { c.cfg.Fetched(err) }()
	}
	c.mu.Lock()
	c.lastTry = c.cfg.Now()
	c.fetches++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.lastError = err
		c.mu.Unlock()
	}()
	url := *c.url.Load()
	if url == "" {
		return errors.New("jwks: no key set URL yet")
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("jwks: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("jwks: GET %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("jwks: GET %s: status %s", url, resp.Status)
	}
	var doc jose.JSONWebKeySet
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDocument)).Decode(&doc); err != nil {
		return fmt.Errorf("jwks: GET %s: %w", url, err)
	}
	keys := slices.DeleteFunc(doc.Keys, func(k jose.JSONWebKey) bool { return !usable(k) })
	if len(keys) == 0 {
		return fmt.Errorf("jwks: GET %s: no public signing key", url)
	}
	// A set fetched replaces the old one: a key withdrawn stops verifying.
	c.set.Store(&snapshot{keys: keys, fetched: c.cfg.Now()})
	return nil
}

// usable reports whether k is a public signing key of an asymmetric
// algorithm.
func usable(k jose.JSONWebKey) bool {
	return k.Use != "enc" && k.Valid() && k.IsPublic() && (k.Algorithm == "" || slices.Contains(Algorithms, k.Algorithm))
}
