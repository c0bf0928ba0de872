package app_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
)

// listFixture is the sessions use case with first pages in memory over a
// mock watcher, live from the start; reads counts the store's lists.
type listFixture struct {
	fixture
	uc    *app.Sessions
	w     *watcherHandle
	reads int
}

func newListFixture(t *testing.T, listeners []string) *listFixture {
	t.Helper()
	f := &listFixture{fixture: newFixture(t)}
	f.uc = app.NewSessions(f.sessions, f.settings, f.projects, f.modes, f.authz, now)
	f.projects.EXPECT().ListProjects(gomock.Any(), gomock.Any()).Return([]domain.Project{apollo}, nil).AnyTimes()
	stored := domain.Session{ID: "s1", Owner: "uma", Project: "p1", Mode: domain.ModeAuto, State: domain.SessionActive, CreatedAt: now.t}
	f.sessions.EXPECT().GetSession(gomock.Any(), "s1").Return(stored, nil).AnyTimes()
	f.sessions.EXPECT().ListSessions(gomock.Any(), gomock.Any()).DoAndReturn(func(context.Context, ports.SessionFilter) ([]domain.Session, error) {
		f.reads++
		return []domain.Session{stored}, nil
	}).AnyTimes()
	w := mocks.NewMockLoginSessionWatcher(gomock.NewController(t))
	w.EXPECT().Listeners(gomock.Any()).Return(listeners, nil).AnyTimes()
	f.w = &watcherHandle{}
	ready := make(chan struct{})
	w.EXPECT().WatchLoginSessions(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
		func(ctx context.Context, changed func(string), live func(bool)) {
			f.w.changed, f.w.live = changed, live
			live(true)
			close(ready)
			<-ctx.Done()
			live(false)
		})
	t.Cleanup(f.uc.KeepListsInMemory(w))
	<-ready
	return f
}

func (f *listFixture) list(t *testing.T, p domain.Principal, req app.PageRequest) {
	t.Helper()
	if _, err := f.uc.List(t.Context(), p, req); err != nil {
		t.Fatalf("List: %v", err)
	}
}

// TestSessionListsInMemory: the first page of a list, of the default size,
// is read from the store once and then from memory, per set of sessions
// the caller may see, until a session is created, changed or deleted here
// or reported changed by the watcher, or the watcher is not live.
func TestSessionListsInMemory(t *testing.T) {
	tests := []struct {
		name string
		// between runs after the first, remembered, read of uma's list.
		between   func(t *testing.T, f *listFixture)
		second    domain.Principal
		req       app.PageRequest
		wantReads int // by the second read
	}{
		{"second read from memory", func(*testing.T, *listFixture) {}, uma, app.PageRequest{}, 1},
		{"the default size asked: from memory", func(*testing.T, *listFixture) {}, uma, app.PageRequest{Limit: app.DefaultPageSize}, 1},
		{"another size: from the store", func(*testing.T, *listFixture) {}, uma, app.PageRequest{Limit: 10}, 2},
		{"a later page: from the store", func(*testing.T, *listFixture) {}, uma,
			app.PageRequest{Cursor: ports.CursorOf(now.t, "s9").String()}, 2},
		{"another owner's list: its own", func(*testing.T, *listFixture) {}, domain.Principal{Subject: "ulf", Roles: uma.Roles}, app.PageRequest{}, 2},
		{"a lead's list: its own", func(*testing.T, *listFixture) {}, lea, app.PageRequest{}, 2},
		{"an admin's list: its own", func(*testing.T, *listFixture) {}, admin, app.PageRequest{}, 2},
		{"created here: forgotten", func(t *testing.T, f *listFixture) {
			f.sessions.EXPECT().CreateSession(gomock.Any(), gomock.Any()).Return(nil)
			if _, err := f.uc.Create(t.Context(), admin, app.NewSession{Mode: string(domain.ModeAuto)}); err != nil {
				t.Fatalf("Create: %v", err)
			}
		}, uma, app.PageRequest{}, 2},
		{"mode changed here: forgotten", func(t *testing.T, f *listFixture) {
			f.modes.EXPECT().SetSessionMode(gomock.Any(), "s1", domain.ModeReadonly).Return(nil)
			if _, err := f.uc.SetMode(t.Context(), admin, "s1", string(domain.ModeReadonly)); err != nil {
				t.Fatalf("SetMode: %v", err)
			}
		}, uma, app.PageRequest{}, 2},
		{"deleted here: forgotten", func(t *testing.T, f *listFixture) {
			f.sessions.EXPECT().DeleteSession(gomock.Any(), "s1").Return(nil)
			if err := f.uc.Delete(t.Context(), admin, "s1"); err != nil {
				t.Fatalf("Delete: %v", err)
			}
		}, uma, app.PageRequest{}, 2},
		{"a failed write: forgotten all the same", func(t *testing.T, f *listFixture) {
			f.sessions.EXPECT().DeleteSession(gomock.Any(), "s1").Return(domain.ErrNotFound)
			if err := f.uc.Delete(t.Context(), admin, "s1"); err == nil {
				t.Fatal("Delete: got nil, want the store's error")
			}
		}, uma, app.PageRequest{}, 2},
		{"changed on another instance: forgotten", func(_ *testing.T, f *listFixture) {
			f.w.changed(ports.SessionChangeKey("s7"))
		}, uma, app.PageRequest{}, 2},
		{"a key changed on another instance: kept", func(_ *testing.T, f *listFixture) {
			f.w.changed(ports.KeyChangeKey("k1"))
		}, uma, app.PageRequest{}, 1},
		{"watcher lost its connection: from the store", func(_ *testing.T, f *listFixture) {
			f.w.live(false)
		}, uma, app.PageRequest{}, 2},
		{"watcher live again: read once more", func(_ *testing.T, f *listFixture) {
			f.w.live(false)
			f.w.live(true)
		}, uma, app.PageRequest{}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newListFixture(t, nil)
			f.list(t, uma, app.PageRequest{})
			tt.between(t, f)
			f.list(t, tt.second, tt.req)
			if f.reads != tt.wantReads {
				t.Errorf("store reads: got %d, want %d", f.reads, tt.wantReads)
			}
		})
	}
}

// TestSessionListsNotServedWhileDown: while the watcher is not live every
// read goes to the store, the first page's included.
func TestSessionListsNotServedWhileDown(t *testing.T) {
	f := newListFixture(t, nil)
	f.w.live(false)
	for range 3 {
		f.list(t, uma, app.PageRequest{})
	}
	if f.reads != 3 {
		t.Errorf("store reads: got %d, want 3", f.reads)
	}
}

// TestSessionWriteWaitsForListeners: a session write is answered only once
// every listener has acknowledged the store's report of it, so that every
// instance has forgotten its pages before the writer hears the answer.
func TestSessionWriteWaitsForListeners(t *testing.T) {
	// In a bubble: the write blocks durably until the acknowledgement, with
	// no real time involved.
	synctest.Test(t, func(t *testing.T) {
		f := newListFixture(t, []string{testListener})
		f.sessions.EXPECT().DeleteSession(gomock.Any(), "s1").Return(nil)
		done := make(chan error, 1)
		go func() { done <- f.uc.Delete(context.Background(), admin, "s1") }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Delete answered (%v) before the listener acknowledged", err)
		default:
		}
		report := ports.SessionChangeKey("s1")
		f.w.changed(report)
		f.w.changed(ports.Ack(testListener, report))
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Delete: %v", err)
			}
		default:
			t.Fatal("Delete not answered after the listener acknowledged")
		}
	})
}
