package app

import (
	"sync"
	"sync/atomic"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// keyMemory keeps, per managed key used since the watcher went live, what a
// request needs to be decided without the store: the key, its owner and
// the principal they make; and, per subject seen, its owner record (or
// that it has none), so that a person's roles are compared without a read.
//
// It is correct only while it hears of every change, as sessionMemory is:
// this instance forgets what it changes itself, the store's watcher reports
// what every instance changed (revocations, owner records), and while the
// watcher is not live nothing is served from memory.
type keyMemory struct {
	mu   sync.RWMutex
	live bool
	// epoch moves with every forget, so that what was read from the store
	// before a change is not remembered after it.
	epoch  uint64
	keys   map[string]*rememberedKey
	owners map[string]*domain.KeyOwner // nil value: the subject has no record
	acks   acks
}

type rememberedKey struct {
	key       domain.APIKey
	principal domain.Principal
	// lastUsed is when the store last recorded a use (Unix nanoseconds).
	lastUsed atomic.Int64
}

func newKeyMemory() *keyMemory {
	return &keyMemory{keys: map[string]*rememberedKey{}, owners: map[string]*domain.KeyOwner{}}
}

// key returns the remembered key id, or nil: unknown, or the watcher is
// not live.
func (m *keyMemory) key(id string) *rememberedKey {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if !m.live {
		return nil
	}
	return m.keys[id]
}

// owner returns the remembered owner record of subject (nil: it has none)
// and whether memory knows.
func (m *keyMemory) owner(subject string) (*domain.KeyOwner, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if !m.live {
		return nil, false
	}
	o, ok := m.owners[subject]
	return o, ok
}

func (m *keyMemory) since() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.epoch
}

// rememberKey keeps k (with its owner and principal), read when the epoch
// was epoch, unless anything was forgotten since.
func (m *keyMemory) rememberKey(epoch uint64, k *rememberedKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.live || m.epoch != epoch || len(m.keys) >= maxRemembered {
		return
	}
	m.keys[k.key.ID] = k
}

// rememberOwner keeps the owner record of subject (nil: none), read when
// the epoch was epoch.
func (m *keyMemory) rememberOwner(epoch uint64, subject string, o *domain.KeyOwner) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.live || m.epoch != epoch || len(m.owners) >= maxRemembered {
		return
	}
	m.owners[subject] = o
}

// heard forgets what a watcher report names, and counts the
// acknowledgements of the changes this instance waits for. An owner's
// change forgets its keys too: their principals carry its roles.
func (m *keyMemory) heard(report string) {
	if m.acks.heard(report) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if id, ok := ports.KeyChangeOf(report); ok {
		m.epoch++
		delete(m.keys, id)
	} else if subject, ok := ports.OwnerChangeOf(report); ok {
		m.epoch++
		m.forgetOwnerLocked(subject)
	}
}

func (m *keyMemory) forgetOwnerLocked(subject string) {
	delete(m.owners, subject)
	for id, k := range m.keys {
		if k.key.Owner == subject {
			delete(m.keys, id)
		}
	}
}

// forget drops what this instance is about to change (a key id or an
// owner subject, as a watcher report names it).
func (m *keyMemory) forget(report string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.epoch++
	if id, ok := ports.KeyChangeOf(report); ok {
		delete(m.keys, id)
	} else if subject, ok := ports.OwnerChangeOf(report); ok {
		m.forgetOwnerLocked(subject)
	}
}

// isLive reports whether the watcher is live.
func (m *keyMemory) isLive() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.live
}

// setLive drops everything: changes made while the watcher was away are
// unknown.
func (m *keyMemory) setLive(live bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.epoch++
	m.live = live
	clear(m.keys)
	clear(m.owners)
}
