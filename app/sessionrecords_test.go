package app_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// listFixture is the sessions use case over session records in memory
// on a mock watcher, live from the start; reads counts the store's lists,
// sessionReads and agentReads its reads of one session and one agent.
type listFixture struct {
	fixture
	uc                       *app.Sessions
	rec                      *app.SessionRecords
	w                        *watcherHandle
	reads                    int
	sessionReads, agentReads int
}

func newListFixture(t *testing.T, listeners []string) *listFixture {
	t.Helper()
	f := &listFixture{fixture: newFixture(t)}
	f.rec = app.NewSessionRecords(f.sessions, f.modes, f.agents)
	f.uc = app.NewSessions(f.rec, f.settings, f.projects, f.rec, f.authz, now)
	f.projects.EXPECT().ListProjects(gomock.Any(), gomock.Any()).Return([]domain.Project{apollo}, nil).AnyTimes()
	stored := domain.Session{ID: "s1", Owner: "uma", Project: "p1", Mode: domain.ModeAuto, State: domain.SessionActive, CreatedAt: now.t}
	f.sessions.EXPECT().GetSession(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, id string) (domain.Session, error) {
		f.sessionReads++
		switch id {
		case "s1":
			return stored, nil
		case "broken":
			return domain.Session{}, errors.New("database unavailable")
		}
		return domain.Session{}, domain.ErrNotFound
	}).AnyTimes()
	f.agents.EXPECT().GetAgent(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, id string) (domain.Agent, error) {
		f.agentReads++
		if id == "a1" {
			return domain.Agent{ID: "a1", Session: "s1", CreatedBy: "uma", CreatedAt: now.t}, nil
		}
		return domain.Agent{}, domain.ErrNotFound
	}).AnyTimes()
	f.sessions.EXPECT().ListSessions(gomock.Any(), gomock.Any()).DoAndReturn(func(context.Context, ports.SessionFilter) ([]domain.Session, error) {
		f.reads++
		return []domain.Session{stored}, nil
	}).AnyTimes()
	f.w = watchedBy(t, listeners, true, f.rec.KeepInMemory)
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

// TestSessionRecordsInMemory: a session, read by ID, is read from the
// store once and then from memory, a session not found too, until a session
// is created, changed or deleted here or reported changed by the watcher,
// or the watcher is not live; a failed read is not kept. An agent found is
// kept the same way; one not found is read again, since creating an agent
// reports nothing.
func TestSessionRecordsInMemory(t *testing.T) {
	session := func(id string) func(*testing.T, *listFixture) error {
		return func(t *testing.T, f *listFixture) error { _, err := f.rec.GetSession(t.Context(), id); return err }
	}
	agent := func(id string) func(*testing.T, *listFixture) error {
		return func(t *testing.T, f *listFixture) error { _, err := f.rec.GetAgent(t.Context(), id); return err }
	}
	tests := []struct {
		name string
		read func(*testing.T, *listFixture) error
		// between runs between the first read and the second.
		between func(t *testing.T, f *listFixture)
		// wantReads counts the store's reads of sessions and agents by
		// the second read.
		wantReads int
		wantErr   error
	}{
		{"a session: second read from memory", session("s1"), func(*testing.T, *listFixture) {}, 1, nil},
		{"a session not found: from memory", session("s9"), func(*testing.T, *listFixture) {}, 1, domain.ErrNotFound},
		{"a failed read: not kept", session("broken"), func(*testing.T, *listFixture) {}, 2, errAny},
		{"created here: forgotten", session("s9"), func(t *testing.T, f *listFixture) {
			f.sessions.EXPECT().CreateSession(gomock.Any(), gomock.Any()).Return(nil)
			if _, err := f.uc.Create(t.Context(), admin, app.NewSession{Mode: string(domain.ModeAuto)}); err != nil {
				t.Fatalf("Create: %v", err)
			}
		}, 2, domain.ErrNotFound},
		{"mode changed here: forgotten", session("s1"), func(t *testing.T, f *listFixture) {
			f.modes.EXPECT().SetSessionMode(gomock.Any(), "s1", domain.ModeReadonly).Return(nil)
			if _, err := f.uc.SetMode(t.Context(), admin, "s1", string(domain.ModeReadonly)); err != nil {
				t.Fatalf("SetMode: %v", err)
			}
		}, 2, nil},
		{"deleted here: forgotten", session("s1"), func(t *testing.T, f *listFixture) {
			f.sessions.EXPECT().DeleteSession(gomock.Any(), "s1").Return(nil)
			if err := f.uc.Delete(t.Context(), admin, "s1"); err != nil {
				t.Fatalf("Delete: %v", err)
			}
		}, 2, nil}, // the mock still holds it; memory asked the store again
		{"changed on another instance: forgotten", session("s1"), func(_ *testing.T, f *listFixture) {
			f.w.changed(ports.SessionChangeKey("s7"))
		}, 2, nil},
		{"a tool changed on another instance: kept", session("s1"), func(_ *testing.T, f *listFixture) {
			f.w.changed(ports.RegistryChangeKey(ports.RegistryTool + "fs.read"))
		}, 1, nil},
		{"watcher lost its connection: from the store", session("s1"), func(_ *testing.T, f *listFixture) {
			f.w.live(false)
		}, 2, nil},
		{"an agent: second read from memory", agent("a1"), func(*testing.T, *listFixture) {}, 1, nil},
		{"an agent not found: from the store again", agent("a9"), func(*testing.T, *listFixture) {}, 2, domain.ErrNotFound},
		{"an agent, watcher lost its connection: from the store", agent("a1"), func(_ *testing.T, f *listFixture) {
			f.w.live(false)
		}, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newListFixture(t, nil)
			_ = tt.read(t, f)
			tt.between(t, f)
			err := tt.read(t, f)
			if got := f.sessionReads + f.agentReads; got != tt.wantReads {
				t.Errorf("store reads: got %d, want %d", got, tt.wantReads)
			}
			switch {
			case tt.wantErr == errAny && err == nil, tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Errorf("second read: got %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// errAny stands for any error in TestSessionRecordsInMemory.
var errAny = errors.New("any error")

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
