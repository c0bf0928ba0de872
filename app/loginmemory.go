package app

import (
	"context"
	"sync"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// maxRemembered bounds the login sessions kept in memory; past it a
// session is simply read from the store on every request.
const maxRemembered = 100_000

// sessionMemory keeps, per login session, what a request needs to be
// authenticated without the store: the principal and the session's limits.
// The tokens stay sealed in the store; they are opened only to refresh.
//
// It is correct only while it hears of every change: this instance forgets
// a session itself when it ends or refreshes it, and the store's watcher
// reports the changes made by other instances. While the watcher is not
// live (not yet connected, connection lost) nothing is served from memory.
type sessionMemory struct {
	mu   sync.Mutex
	live bool
	// epoch moves with every forget, so that a session read from the store
	// before a change it has not seen is not remembered after it.
	epoch   uint64
	entries map[string]*remembered
	// acks are the sessions this instance ended and waits to see
	// acknowledged by every listening instance.
	acks acks
	// revoked holds the hashes of the provider sessions a back-channel
	// logout ended, loaded when the watcher went live and kept current by
	// its reports, so a Bearer token is checked without a read.
	revoked map[string]struct{}
}

type remembered struct {
	principal domain.Principal
	expiresAt time.Time
	lastSeen  time.Time
	// refreshAt is when the access token enters the refresh window.
	refreshAt time.Time
	// refreshEnd is when the refresh token expires (zero: unknown).
	refreshEnd  time.Time
	accessUntil time.Time
}

func newSessionMemory() *sessionMemory {
	return &sessionMemory{entries: make(map[string]*remembered), revoked: make(map[string]struct{})}
}

// lookup returns the remembered session of hash if it may be served
// without the store at now, with whether its last use is due to be
// recorded. Anything the store must decide (expiry, idle, refresh) is a miss.
func (m *sessionMemory) lookup(hash string, now time.Time, idle time.Duration) (domain.Principal, bool, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[hash]
	if !m.live || e == nil {
		return domain.Principal{}, false, false
	}
	if !now.Before(e.expiresAt) || now.Sub(e.lastSeen) >= idle || !now.Before(e.refreshAt) ||
		(!e.refreshEnd.IsZero() && !now.Before(e.refreshEnd) && !now.Before(e.accessUntil)) {
		delete(m.entries, hash)
		return domain.Principal{}, false, false
	}
	touch := now.Sub(e.lastSeen) >= touchEvery
	if touch {
		e.lastSeen = now
	}
	return e.principal, touch, true
}

// since returns the epoch to hand to remember after reading the store.
func (m *sessionMemory) since() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epoch
}

// remember keeps s, read from the store when the epoch was epoch, unless
// anything was forgotten since (a change it may not reflect).
func (m *sessionMemory) remember(epoch uint64, s ports.LoginSession, p domain.Principal, refreshBefore time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.live || m.epoch != epoch || len(m.entries) >= maxRemembered {
		return
	}
	refreshAt := s.Tokens.AccessExpiry.Add(-refreshBefore)
	if s.Tokens.RefreshToken == "" {
		refreshAt = s.Tokens.AccessExpiry // nothing to refresh: served until it expires, then ended
	}
	m.entries[s.IDHash] = &remembered{principal: p, expiresAt: s.ExpiresAt, lastSeen: s.LastSeen,
		refreshAt: refreshAt, refreshEnd: s.Tokens.RefreshExpiry, accessUntil: s.Tokens.AccessExpiry}
}

// forget drops the session of hash (ended or changed).
func (m *sessionMemory) forget(hash string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.epoch++
	delete(m.entries, hash)
}

// heard is the watcher's report of a committed change of hash: it forgets
// the session, or counts an acknowledgement of a session this instance
// ended.
func (m *sessionMemory) heard(hash string) {
	if m.acks.heard(hash) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if sid, ok := ports.RevokedSessionOf(hash); ok {
		m.revoked[sid] = struct{}{}
		return
	}
	if ports.IsKeyReport(hash) || ports.IsSessionReport(hash) || ports.IsRegistryReport(hash) {
		return // the managed keys' (see keyMemory), the sessions' (see SessionRecords), the registry's (see Registry)
	}
	m.epoch++
	delete(m.entries, hash)
}

// isLive reports whether the watcher is live.
func (m *sessionMemory) isLive() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live
}

// setLive drops everything and serves from memory again only when live:
// changes made while the watcher was away are unknown. Going live, it
// takes the provider sessions revoked so far, read after the watcher
// started listening (later ones it reports).
func (m *sessionMemory) setLive(live bool, revoked []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.epoch++
	m.live = live
	clear(m.entries)
	clear(m.revoked)
	for _, h := range revoked {
		m.revoked[h] = struct{}{}
	}
}

// revokedKnown reports whether the provider session sidHash was revoked,
// and whether memory knows: not while the watcher is not live, nor past
// maxRemembered revocations (then the store answers).
func (m *sessionMemory) revokedKnown(sidHash string) (revoked, known bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.live || len(m.revoked) >= maxRemembered {
		return false, false
	}
	_, revoked = m.revoked[sidHash]
	return revoked, true
}

// prune drops the sessions past their end or idle limit at now.
func (m *sessionMemory) prune(now time.Time, idle time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for h, e := range m.entries {
		if !now.Before(e.expiresAt) || now.Sub(e.lastSeen) >= idle {
			delete(m.entries, h)
		}
	}
}

// KeepSessionsInMemory makes cookie authentication serve sessions from
// memory after their first use, with watch reporting the sessions other
// instances change. It returns the function that stops watching.
func (l *Login) KeepSessionsInMemory(watch ports.LoginSessionWatcher) (stop func()) {
	m := newSessionMemory()
	l.memory, l.watch = m, watch
	return untilStopped(func(ctx context.Context) {
		watch.WatchLoginSessions(ctx, m.heard, func(live bool) {
			if !live {
				m.setLive(false, nil)
				return
			}
			revoked, err := l.sessions.RevokedProviderSessions(ctx, l.clock.Now())
			if err != nil {
				return // not live: sessions and revocations are read from the store
			}
			m.setLive(true, revoked)
		})
	})
}
