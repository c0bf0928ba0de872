package app

import (
	"context"
	"strconv"
	"sync"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// sessionLists keeps the first page of session lists (no cursor, the
// default size) as the store answered it, per store filter: the owner and
// projects that decide which sessions a caller may see, so that callers
// who see the same set share a page and no caller is served another's.
//
// It is correct only while it hears of every change, as keyMemory is: this
// instance forgets every list once it has changed a session, the store's
// watcher reports the sessions every instance changed, and while the
// watcher is not live nothing is served from memory. A change forgets every
// list, not only its owner's: an ADMIN's and a LEAD's lists hold other
// owners' sessions, and a page is cheap to read again.
type sessionLists struct {
	mu   sync.Mutex
	live bool
	// epoch moves with every forget, so that a page read from the store
	// before a change is not remembered after it.
	epoch uint64
	pages map[string][]domain.Session
	acks  acks
}

// maxLists bounds the pages kept: past it a page is read from the store
// until the next change forgets them all. A page holds at most
// DefaultPageSize+1 sessions (about 10 kB), so at most about 10 MB.
const maxLists = 1024

func newSessionLists() *sessionLists { return &sessionLists{pages: map[string][]domain.Session{}} }

// listKey names the sessions f selects, its page aside: each of the owner
// and projects prefixed by its length, so that no two filters share a key.
func listKey(f ports.SessionFilter) string {
	b := make([]byte, 0, 64)
	for _, s := range append([]string{f.Owner}, f.Projects...) {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
	}
	return string(b)
}

// cacheable reports whether f asks for a page kept in memory: the first, of
// the default size.
func cacheable(f ports.SessionFilter) bool {
	return f.After.IsZero() && f.Limit == DefaultPageSize+1
}

// page returns the page remembered for key; false while the watcher is not
// live.
func (m *sessionLists) page(key string) ([]domain.Session, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.live {
		return nil, false
	}
	p, ok := m.pages[key]
	return p, ok
}

func (m *sessionLists) since() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epoch
}

// remember keeps the page p of key, read when the epoch was epoch, unless
// anything was forgotten since.
func (m *sessionLists) remember(epoch uint64, key string, p []domain.Session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.live || m.epoch != epoch || len(m.pages) >= maxLists {
		return
	}
	m.pages[key] = p
}

// heard forgets every page on a session's change reported by the watcher,
// and counts the acknowledgements of the changes this instance waits for.
func (m *sessionLists) heard(report string) {
	if m.acks.heard(report) || !ports.IsSessionReport(report) {
		return
	}
	m.forget()
}

// forget drops every page.
func (m *sessionLists) forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.epoch++
	clear(m.pages)
}

func (m *sessionLists) isLive() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live
}

// setLive drops every page: changes made while the watcher was away are
// unknown.
func (m *sessionLists) setLive(live bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.epoch++
	m.live = live
	clear(m.pages)
}

// KeepListsInMemory makes the first page of each session list (no cursor,
// the default size) served from memory after its first read, with watch
// reporting the sessions every instance changes. It returns the function
// that stops watching.
func (s *Sessions) KeepListsInMemory(watch ports.LoginSessionWatcher) (stop func()) {
	m := newSessionLists()
	s.lists, s.watch = m, watch
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		watch.WatchLoginSessions(ctx, m.heard, m.setLive)
	}()
	return func() { cancel(); <-done }
}

// listSessions reads the sessions f selects: a page kept in memory from
// there, any other from the store.
func (s *Sessions) listSessions(ctx context.Context, f ports.SessionFilter) ([]domain.Session, error) {
	if s.lists == nil || !cacheable(f) {
		return s.store.ListSessions(ctx, f)
	}
	key := listKey(f)
	if p, ok := s.lists.page(key); ok {
		return p, nil
	}
	epoch := s.lists.since()
	p, err := s.store.ListSessions(ctx, f)
	if err == nil {
		s.lists.remember(epoch, key, p)
	}
	return p, err
}

// changeEverywhere makes the change of session id, and answers once the
// pages kept in memory by every instance listening when it was made are
// forgotten (see changedEverywhere).
func (s *Sessions) changeEverywhere(ctx context.Context, id string, change func() error) error {
	if s.lists == nil {
		return change()
	}
	return changedEverywhere(ctx, s.watch, &s.lists.acks, s.lists.isLive(), s.lists.forget, ports.SessionChangeKey(id), change)
}
