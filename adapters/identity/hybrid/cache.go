package hybrid

import (
	"crypto/sha256"
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// cacheKey identifies a credential by its carrier and the SHA-256 digest of
// its value: the raw value is never kept, so a heap dump of the cache holds
// no usable secret. The carrier is part of the key because the centre treats
// a Bearer token and a session cookie of the same value differently.
type cacheKey struct {
	kind   ports.CredentialKind
	digest [sha256.Size]byte
}

func keyOf(cred ports.Credential) cacheKey {
	return cacheKey{kind: cred.Kind, digest: cred.Digest()}
}

// flightKey names the key's call to the centre for singleflight: the
// carrier's byte and the digest.
func (k cacheKey) flightKey() string {
	var b [1 + sha256.Size]byte
	b[0] = byte(k.kind)
	copy(b[1:], k.digest[:])
	return string(b[:])
}

// answer is one cached answer of the centre and when it stops being used.
type answer struct {
	principal domain.Principal
	expires   time.Time
}

// answers is a bounded, concurrency-safe least-recently-used map of the
// centre's answers, each used until its own expiry on the Authenticator's
// clock. (golang-lru's expirable.LRU reads time.Now itself, so the
// injected clock could not drive it, and in v2.0.7 each one runs a
// cleanup goroutine that never exits.)
type answers struct{ lru *lru.Cache[cacheKey, answer] }

func newAnswers(size int) (answers, error) {
	c, err := lru.New[cacheKey, answer](size)
	if err != nil {
		return answers{}, fmt.Errorf("hybrid: cache: %w", err)
	}
	return answers{lru: c}, nil
}

// get returns the principal cached for k if it has not expired at now. An
// expired entry is removed: it is never used again, even when the centre is
// down.
func (c answers) get(k cacheKey, now time.Time) (domain.Principal, bool) {
	a, ok := c.lru.Get(k)
	if !ok {
		return domain.Principal{}, false
	}
	if !now.Before(a.expires) {
		c.lru.Remove(k)
		return domain.Principal{}, false
	}
	return a.principal, true
}

// put stores p for k until expires, evicting the least recently used entry
// when the cache is full.
func (c answers) put(k cacheKey, p domain.Principal, expires time.Time) {
	c.lru.Add(k, answer{principal: p, expires: expires})
}

func (c answers) len() int { return c.lru.Len() }
