// Package ttlcache is a bounded, concurrency-safe least-recently-used map
// (github.com/hashicorp/golang-lru/v2) whose entries each carry their own
// expiry, read on the caller's clock: the identity adapters' caches of
// verified credentials (hybrid mode's answers of the centre, the OIDC
// adapter's verified Bearer tokens). An expired entry is never returned,
// and is removed when it is asked for.
//
// Not golang-lru's expirable.LRU: it reads time.Now itself, so an injected
// clock cannot drive it, and in v2.0.7 each one starts a cleanup goroutine
// that never exits (measured: 100 caches, 100 more goroutines).
package ttlcache

import (
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Cache maps K to V until each entry's expiry.
type Cache[K comparable, V any] struct {
	lru *lru.Cache[K, entry[V]]
}

type entry[V any] struct {
	value   V
	expires time.Time
}

// New returns a cache of at most size entries; size must be positive.
func New[K comparable, V any](size int) (*Cache[K, V], error) {
	c, err := lru.New[K, entry[V]](size)
	if err != nil {
		return nil, fmt.Errorf("ttlcache: %w", err)
	}
	return &Cache[K, V]{lru: c}, nil
}

// Get returns the value cached for k if it has not expired at now.
func (c *Cache[K, V]) Get(k K, now time.Time) (V, bool) {
	e, ok := c.lru.Get(k)
	if ok && now.Before(e.expires) {
		return e.value, true
	}
	if ok {
		c.lru.Remove(k)
	}
	var zero V
	return zero, false
}

// Put stores v for k until expires, evicting the least recently used entry
// when the cache is full.
func (c *Cache[K, V]) Put(k K, v V, expires time.Time) {
	c.lru.Add(k, entry[V]{value: v, expires: expires})
}

// Len is the number of entries held, expired ones included until they are
// asked for or evicted.
func (c *Cache[K, V]) Len() int { return c.lru.Len() }
