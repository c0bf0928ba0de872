package app

import (
	"context"
	"sync"

	"github.com/agentauth/agentauth/ports"
)

// WatchHub shares the store's one change watcher (on PostgreSQL, one
// LISTEN connection) between everything kept in memory on its word: the
// login sessions and the managed keys. Each subscriber hears every report
// and whether the watcher is live, in order: a subscriber joining while the
// watcher is live is told so before any report reaches it.
type WatchHub struct {
	w    ports.LoginSessionWatcher
	mu   sync.Mutex
	live bool
	next int
	subs map[int]hubSubscriber
}

type hubSubscriber struct {
	changed func(string)
	live    func(bool)
}

var _ ports.LoginSessionWatcher = (*WatchHub)(nil)

// NewWatchHub starts watching w and returns the hub and the function that
// stops it.
func NewWatchHub(w ports.LoginSessionWatcher) (*WatchHub, func()) {
	h := &WatchHub{w: w, subs: map[int]hubSubscriber{}}
	return h, untilStopped(func(ctx context.Context) { w.WatchLoginSessions(ctx, h.changed, h.setLive) })
}

// Callbacks run under the lock, so that each subscriber hears reports and
// liveness in the order the watcher gave them.
func (h *WatchHub) changed(report string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.subs {
		s.changed(report)
	}
}

func (h *WatchHub) setLive(live bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.live = live
	for _, s := range h.subs {
		s.live(live)
	}
}

// WatchLoginSessions subscribes until ctx ends, as the store's watcher
// would serve one caller.
func (h *WatchHub) WatchLoginSessions(ctx context.Context, changed func(string), live func(bool)) {
	h.mu.Lock()
	id := h.next
	h.next++
	h.subs[id] = hubSubscriber{changed: changed, live: live}
	if h.live {
		live(true)
	}
	h.mu.Unlock()
	<-ctx.Done()
	h.mu.Lock()
	delete(h.subs, id)
	h.mu.Unlock()
	live(false)
}

// Listeners names the listeners of the watched store.
func (h *WatchHub) Listeners(ctx context.Context) ([]string, error) { return h.w.Listeners(ctx) }
