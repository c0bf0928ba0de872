package app

import (
	"context"
	"sync"
	"time"

	"github.com/agentauth/agentauth/ports"
)

// acks tracks the changes this instance made and waits to see acknowledged
// by every instance listening when it made them (ports.Ack): once each
// has, each has acted on the change, and what it ended is refused
// everywhere. Login sessions and managed keys use it alike.
type acks struct {
	mu      sync.Mutex
	pending map[string]*awaited
}

// awaited is one change and the listeners yet to acknowledge it.
type awaited struct {
	listeners map[string]bool
	done      chan struct{}
}

// echoWait bounds the wait for acknowledgements: a listener that does not
// answer within it has lost its connection (its instance then serves
// nothing from memory) or is stuck.
const echoWait = 2 * time.Second

// expect registers, before this instance makes the change report, that it
// will wait for every one of listeners to acknowledge it. With no listener
// there is nothing to wait for (nil, true); while this instance's own
// watcher is not live no acknowledgement can reach it (nil, false).
func (a *acks) expect(report string, listeners []string, live bool) (ch chan struct{}, confirmable bool) {
	if len(listeners) == 0 {
		return nil, true
	}
	if !live {
		return nil, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending == nil {
		a.pending = map[string]*awaited{}
	}
	w := a.pending[report]
	if w == nil {
		w = &awaited{listeners: map[string]bool{}, done: make(chan struct{})}
		a.pending[report] = w
	}
	for _, l := range listeners {
		w.listeners[l] = true
	}
	return w.done, true
}

// heard counts a watcher report if it is an acknowledgement, and says so.
func (a *acks) heard(report string) bool {
	listener, changed, ok := ports.AckOf(report)
	if !ok {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if w := a.pending[changed]; w != nil {
		delete(w.listeners, listener)
		if len(w.listeners) == 0 {
			close(w.done)
			delete(a.pending, changed)
		}
	}
	return true
}

// await waits until every listener acknowledged the change registered by
// expect, and reports whether they all did within echoWait.
func (a *acks) await(ctx context.Context, report string, ch chan struct{}) bool {
	if ch == nil {
		return true
	}
	t := time.NewTimer(echoWait)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	a.abandon(report, ch)
	return false
}

// abandon stops waiting for the change registered by expect (the change
// failed, or the wait ended).
func (a *acks) abandon(report string, ch chan struct{}) {
	if ch == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if w := a.pending[report]; w != nil && w.done == ch {
		delete(a.pending, report)
	}
}

// changedEverywhere makes the change that the watcher reports as report,
// and answers once what every instance listening when it was made keeps in
// memory of it is forgotten: this instance's (forget) at once after the
// change, every other's when its watcher has acknowledged the store's
// report of it. A listener that does not acknowledge within echoWait has
// lost its connection (its instance then serves nothing from memory) or is
// stuck; the change stands and is answered. While this instance's own
// watcher is not live (live false) it cannot hear acknowledgements and
// answers without waiting for them. Two changes with one report at once
// (a mode change and a delete of one session) wait for the same report, so
// the second may be answered on the first's acknowledgements.
func changedEverywhere(ctx context.Context, watch ports.LoginSessionWatcher, a *acks, live bool, forget func(), report string, change func() error) error {
	listeners, err := watch.Listeners(ctx)
	if err != nil {
		return err
	}
	echo, _ := a.expect(report, listeners, live)
	err = change()
	// After the change, whether or not it committed: what was read while
	// it was being made is not kept, nor served after its answer.
	forget()
	if err != nil {
		a.abandon(report, echo)
		return err
	}
	a.await(ctx, report, echo)
	return nil
}
