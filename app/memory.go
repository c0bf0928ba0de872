package app

import (
	"context"
	"errors"
	"sync"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// memory keeps a store's answers by what was asked, for what requests read
// far more often than anyone changes: the registry (see Registry) and the
// agent sessions with their agents (see SessionRecords).
//
// It is correct only while it hears of every change: the instance that
// writes forgets everything once it has written, before the write is
// answered (see change); every other instance forgets on the store
// watcher's report of it and acknowledges the report, and the write is
// answered once every listener has (see changedEverywhere); while the
// watcher is not live nothing is served from memory. A change forgets
// everything: changes are rare beside reads, and each read is one row.
type memory struct {
	// concerns picks the watcher reports of changes to what is kept.
	concerns func(report string) bool
	// max bounds what is kept: past it answers are read from the store
	// until the next change forgets them all.
	max int

	mu   sync.Mutex
	live bool
	// epoch moves with every forget, so that an answer read before a
	// change is not kept after it.
	epoch   uint64
	entries map[string]memoryEntry
	acks    acks
	// watch is the watcher this memory listens to (see keepWatching).
	watch ports.LoginSessionWatcher
}

type memoryEntry struct {
	v   any
	err error
}

func newMemory(concerns func(report string) bool, maxEntries int) *memory {
	return &memory{concerns: concerns, max: maxEntries, entries: map[string]memoryEntry{}}
}

// keepWatching listens to watch until the returned function is called.
func (m *memory) keepWatching(watch ports.LoginSessionWatcher) (stop func()) {
	m.watch = watch
	return untilStopped(func(ctx context.Context) { watch.WatchLoginSessions(ctx, m.heard, m.setLive) })
}

// untilStopped runs listen in a goroutine of its own, with a context that
// the returned function cancels; that function returns once listen has.
func untilStopped(listen func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		listen(ctx)
	}()
	return func() { cancel(); <-done }
}

func (m *memory) get(key string) (memoryEntry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.live {
		return memoryEntry{}, false
	}
	e, ok := m.entries[key]
	return e, ok
}

func (m *memory) since() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epoch
}

func (m *memory) remember(epoch uint64, key string, e memoryEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.live || m.epoch != epoch || len(m.entries) >= m.max {
		return
	}
	m.entries[key] = e
}

// heard forgets everything on a change the watcher reports, and counts the
// acknowledgements of the changes this instance waits for.
func (m *memory) heard(report string) {
	if m.acks.heard(report) || !m.concerns(report) {
		return
	}
	m.forget()
}

func (m *memory) forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.epoch++
	clear(m.entries)
}

func (m *memory) isLive() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live
}

// setLive forgets everything: changes made while the watcher was away are
// unknown.
func (m *memory) setLive(live bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.epoch++
	m.live = live
	clear(m.entries)
}

// change makes the write that the store reports as report, answered once
// every instance has forgotten what it kept (see changedEverywhere). A nil
// memory keeps nothing: the write is only made.
func (m *memory) change(ctx context.Context, report string, write func() error) error {
	if m == nil {
		return write()
	}
	return changedEverywhere(ctx, m.watch, &m.acks, m.isLive(), m.forget, report, write)
}

// kept answers key from memory, else from read, and keeps what read
// answered: a value, or domain.ErrNotFound, so that names asked for and
// absent are not read again either. Values kept are shared by every
// caller: none changes them.
func kept[T any](m *memory, key string, read func() (T, error)) (T, error) {
	return keptIf(m, key, read, func(err error) bool { return err == nil || errors.Is(err, domain.ErrNotFound) })
}

// keptFound is kept for what no change is reported of when it appears:
// only a value is kept; domain.ErrNotFound is read again next time.
func keptFound[T any](m *memory, key string, read func() (T, error)) (T, error) {
	return keptIf(m, key, read, func(err error) bool { return err == nil })
}

func keptIf[T any](m *memory, key string, read func() (T, error), keep func(error) bool) (T, error) {
	if m == nil {
		return read()
	}
	if e, ok := m.get(key); ok {
		v, _ := e.v.(T)
		return v, e.err
	}
	epoch := m.since()
	v, err := read()
	if keep(err) {
		m.remember(epoch, key, memoryEntry{v: v, err: err})
	}
	return v, err
}
