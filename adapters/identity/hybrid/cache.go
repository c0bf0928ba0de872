package hybrid

import (
	"crypto/sha256"
	"time"

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

// entry is one cached answer of the centre, linked into the recency list.
type entry struct {
	key        cacheKey
	principal  domain.Principal
	expires    time.Time
	prev, next *entry
}

// lru is a bounded least-recently-used map of answers. It is not safe for
// concurrent use; the Authenticator guards it with its mutex. The recency
// list is intrusive so a hit allocates nothing.
type lru struct {
	max     int
	entries map[cacheKey]*entry
	// head is the most recently used entry, tail the least.
	head, tail *entry
}

func newLRU(max int) *lru {
	return &lru{max: max, entries: make(map[cacheKey]*entry, min(max, 1024))}
}

// get returns the principal cached for k if it has not expired at now. An
// expired entry is removed: it is never used again, even when the centre is
// down.
func (c *lru) get(k cacheKey, now time.Time) (domain.Principal, bool) {
	e, ok := c.entries[k]
	if !ok {
		return domain.Principal{}, false
	}
	if !now.Before(e.expires) {
		c.remove(e)
		return domain.Principal{}, false
	}
	c.moveToFront(e)
	return e.principal, true
}

// put stores p for k until expires, evicting the least recently used entry
// when the cache is full, so it never holds more than max entries.
func (c *lru) put(k cacheKey, p domain.Principal, expires time.Time) {
	if e, ok := c.entries[k]; ok {
		e.principal, e.expires = p, expires
		c.moveToFront(e)
		return
	}
	for len(c.entries) >= c.max && c.tail != nil {
		c.remove(c.tail)
	}
	e := &entry{key: k, principal: p, expires: expires}
	c.entries[k] = e
	c.pushFront(e)
}

func (c *lru) len() int { return len(c.entries) }

func (c *lru) remove(e *entry) {
	c.unlink(e)
	delete(c.entries, e.key)
}

func (c *lru) moveToFront(e *entry) {
	if c.head == e {
		return
	}
	c.unlink(e)
	c.pushFront(e)
}

func (c *lru) pushFront(e *entry) {
	e.prev, e.next = nil, c.head
	if c.head != nil {
		c.head.prev = e
	}
	c.head = e
	if c.tail == nil {
		c.tail = e
	}
}

func (c *lru) unlink(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		c.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		c.tail = e.prev
	}
	e.prev, e.next = nil, nil
}
