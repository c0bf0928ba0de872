package app_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
)

// testListener is the one listener the mock watcher names.
const testListener = "l1"

// watcherHandle drives a use case's watcher from a test: it hands out the
// callbacks WatchLoginSessions received.
type watcherHandle struct {
	changed func(string)
	live    func(bool)
}

// watchedBy starts keep (a use case's KeepInMemory) on a mock watcher
// naming listeners, live from the start unless startLive is false, and
// returns once the use case listens.
func watchedBy(t *testing.T, listeners []string, startLive bool, keep func(ports.LoginSessionWatcher) (stop func())) *watcherHandle {
	t.Helper()
	w := mocks.NewMockLoginSessionWatcher(gomock.NewController(t))
	w.EXPECT().Listeners(gomock.Any()).Return(listeners, nil).AnyTimes()
	h := &watcherHandle{}
	ready := make(chan struct{})
	w.EXPECT().WatchLoginSessions(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
		func(ctx context.Context, changed func(string), live func(bool)) {
			h.changed, h.live = changed, live
			if startLive {
				live(true)
			}
			close(ready)
			<-ctx.Done()
			live(false)
		})
	t.Cleanup(keep(w))
	<-ready
	return h
}

// withMemory switches the fixture's login to sessions in memory over a
// mock watcher, live from the start unless startLive is false.
func withMemory(t *testing.T, f *loginFixture, startLive bool) *watcherHandle {
	t.Helper()
	// Going live, the memory takes the revocations made so far.
	f.sessions.EXPECT().RevokedProviderSessions(gomock.Any(), gomock.Any()).Return(nil, nil).AnyTimes()
	return watchedBy(t, []string{testListener}, startLive, f.login.KeepSessionsInMemory)
}

// TestSessionsInMemory: a cookie session used once is served without the
// store until this or another instance changes or ends it, it must be
// refreshed, or the watcher cannot vouch for the changes.
func TestSessionsInMemory(t *testing.T) {
	hash := app.Digest(goodCookie)
	tests := []struct {
		name string
		// between runs after the first, remembered, use and before the
		// second; it sets the store expectations of the second use.
		between   func(t *testing.T, f *loginFixture, w *watcherHandle)
		startLive bool
		wantOK    bool
	}{
		{"second use from memory", func(t *testing.T, f *loginFixture, w *watcherHandle) {}, true, true},
		{"watcher not live: read every time", func(t *testing.T, f *loginFixture, w *watcherHandle) {
			f.sessions.EXPECT().GetLoginSession(gomock.Any(), hash).Return(stored(f, nil), nil)
		}, false, true},
		{"ended on another instance: refused", func(t *testing.T, f *loginFixture, w *watcherHandle) {
			w.changed(hash)
			f.sessions.EXPECT().GetLoginSession(gomock.Any(), hash).Return(ports.LoginSession{}, domain.ErrNotFound)
		}, true, false},
		{"watcher lost its connection: read again", func(t *testing.T, f *loginFixture, w *watcherHandle) {
			w.live(false)
			f.sessions.EXPECT().GetLoginSession(gomock.Any(), hash).Return(stored(f, nil), nil)
		}, true, true},
		{"logout here: refused at once", func(t *testing.T, f *loginFixture, w *watcherHandle) {
			f.sessions.EXPECT().GetLoginSession(gomock.Any(), hash).Return(stored(f, nil), nil)
			f.sessions.EXPECT().DeleteLoginSession(gomock.Any(), hash).DoAndReturn(func(context.Context, string) error {
				w.changed(hash) // the store reports its own change
				w.changed(ports.Ack(testListener, hash))
				return nil
			})
			f.idp.EXPECT().Logout(gomock.Any(), "rt").Return(nil)
			f.idp.EXPECT().EndSessionURL("it").Return("")
			if _, _, err := f.login.Logout(t.Context(), goodCookie); err != nil {
				t.Fatalf("Logout: %v", err)
			}
			f.sessions.EXPECT().GetLoginSession(gomock.Any(), hash).Return(ports.LoginSession{}, domain.ErrNotFound)
		}, true, false},
		{"last use recorded once a minute, without a read", func(t *testing.T, f *loginFixture, w *watcherHandle) {
			f.now = f.now.Add(61 * time.Second)
			f.sessions.EXPECT().TouchLoginSession(gomock.Any(), hash, f.now).Return(nil)
		}, true, true},
		{"recording the last use finds the session gone: refused", func(t *testing.T, f *loginFixture, w *watcherHandle) {
			f.now = f.now.Add(61 * time.Second)
			f.sessions.EXPECT().TouchLoginSession(gomock.Any(), hash, f.now).Return(domain.ErrNotFound)
		}, true, false},
		{"idle past the limit: the store decides", func(t *testing.T, f *loginFixture, w *watcherHandle) {
			f.now = f.now.Add(loginCfg.SessionIdle)
			f.sessions.EXPECT().GetLoginSession(gomock.Any(), hash).Return(stored(f, func(s *ports.LoginSession) { s.LastSeen = f.now.Add(-loginCfg.SessionIdle) }), nil)
			f.sessions.EXPECT().DeleteLoginSession(gomock.Any(), hash).Return(nil)
		}, true, false},
		{"refresh due: tokens opened and refreshed", func(t *testing.T, f *loginFixture, w *watcherHandle) {
			f.now = f.now.Add(4*time.Minute + 30*time.Second) // access token (5 min) within RefreshBefore (1 min)
			f.sessions.EXPECT().GetLoginSession(gomock.Any(), hash).Return(stored(f, func(s *ports.LoginSession) {
				s.Tokens.AccessExpiry = f.now.Add(30 * time.Second)
			}), nil)
			f.idp.EXPECT().Refresh(gomock.Any(), "rt").Return(tokenSet(f.now, domain.RoleUser), nil)
			f.sessions.EXPECT().UpdateLoginSession(gomock.Any(), gomock.Any()).Return(nil)
		}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newLoginFixture(t, loginCfg)
			w := withMemory(t, f, tt.startLive)
			f.sessions.EXPECT().GetLoginSession(gomock.Any(), hash).Return(stored(f, nil), nil)
			if _, err := f.login.Authenticate(t.Context(), goodCookie); err != nil {
				t.Fatalf("first use: %v", err)
			}
			tt.between(t, f, w)
			p, err := f.login.Authenticate(t.Context(), goodCookie)
			switch {
			case tt.wantOK && (err != nil || p.Subject != "sub-1"):
				t.Errorf("second use: %+v, %v; want sub-1", p, err)
			case !tt.wantOK && !errors.Is(err, domain.ErrUnauthenticated):
				t.Errorf("second use: %+v, %v; want ErrUnauthenticated", p, err)
			}
		})
	}
}

// TestSessionReadBeforeAChangeIsNotRemembered: a session read from the
// store while another instance ends it is not kept when the notice of the
// end arrives before it would have been remembered.
func TestSessionReadBeforeAChangeIsNotRemembered(t *testing.T) {
	hash := app.Digest(goodCookie)
	f := newLoginFixture(t, loginCfg)
	w := withMemory(t, f, true)
	f.sessions.EXPECT().GetLoginSession(gomock.Any(), hash).DoAndReturn(func(context.Context, string) (ports.LoginSession, error) {
		w.changed(hash) // ended elsewhere after this read
		return stored(f, nil), nil
	})
	if _, err := f.login.Authenticate(t.Context(), goodCookie); err != nil {
		t.Fatalf("first use: %v", err)
	}
	f.sessions.EXPECT().GetLoginSession(gomock.Any(), hash).Return(ports.LoginSession{}, domain.ErrNotFound)
	if _, err := f.login.Authenticate(t.Context(), goodCookie); !errors.Is(err, domain.ErrUnauthenticated) {
		t.Errorf("second use: %v; want ErrUnauthenticated (not served from memory)", err)
	}
}

// TestLogoutAnswersAfterEveryInstanceIsTold: a logout returns only once the
// watcher has reported the ended session, which the database announces to
// every instance at once; so the next request on another instance is
// refused, not served from that instance's memory.
func TestLogoutAnswersAfterEveryInstanceIsTold(t *testing.T) {
	// In a bubble: the notification's delay is on the fake clock, so the
	// test waits for nothing real and the order cannot depend on the load.
	synctest.Test(t, func(t *testing.T) {
		hash := app.Digest(goodCookie)
		f := newLoginFixture(t, loginCfg)
		w := withMemory(t, f, true)
		var reported atomic.Bool
		f.sessions.EXPECT().GetLoginSession(gomock.Any(), hash).Return(stored(f, nil), nil)
		f.sessions.EXPECT().DeleteLoginSession(gomock.Any(), hash).DoAndReturn(func(context.Context, string) error {
			go func() { // the notification arrives on the watcher's own connection, later
				time.Sleep(20 * time.Millisecond)
				reported.Store(true)
				w.changed(hash)
			}()
			return nil
		})
		f.idp.EXPECT().Logout(gomock.Any(), "rt").Return(nil)
		f.idp.EXPECT().EndSessionURL("it").Return("")
		if _, _, err := f.login.Logout(t.Context(), goodCookie); err != nil {
			t.Fatalf("Logout: %v", err)
		}
		if !reported.Load() {
			t.Error("Logout returned before the watcher reported the ended session")
		}
	})
}
