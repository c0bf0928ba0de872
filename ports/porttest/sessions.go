package porttest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// RunSessionStore checks a ports.SessionStore.
func RunSessionStore(t *testing.T, newStore Factory[ports.SessionStore]) {
	t.Run("CreateThenGetRoundTrips", func(t *testing.T) { testSessionRoundTrip(t, newStore(t)) })
	t.Run("GetUnknownIsNotFound", func(t *testing.T) {
		_, err := newStore(t).GetSession(ctxFor(t), "no-such-session")
		if !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("GetSession(unknown) error = %v, want domain.ErrNotFound", err)
		}
	})
	t.Run("DuplicateIDIsRefused", func(t *testing.T) { testSessionDuplicate(t, newStore(t)) })
	t.Run("List", func(t *testing.T) { testSessionList(t, newStore(t)) })
	t.Run("Delete", func(t *testing.T) { testSessionDelete(t, newStore(t)) })
	t.Run("Pages", func(t *testing.T) { testSessionPages(t, newStore) })
}

func session(id, owner string, created time.Time) domain.Session {
	return domain.Session{ID: id, Owner: owner, Project: "p-" + id, Title: "title of " + id,
		Mode: domain.ModeAsk, State: domain.SessionActive, CreatedAt: created, OwnerRoles: []domain.Role{domain.RoleUser, "SRE"}}
}

func sameSession(a, b domain.Session) bool {
	return a.ID == b.ID && a.Owner == b.Owner && a.Project == b.Project && a.Title == b.Title &&
		a.Mode == b.Mode && a.State == b.State && a.CreatedAt.Equal(b.CreatedAt) &&
		domain.JoinRoles(a.OwnerRoles) == domain.JoinRoles(b.OwnerRoles)
}

func testSessionRoundTrip(t *testing.T, st ports.SessionStore) {
	ctx := ctxFor(t)
	tests := []domain.Session{
		session("s1", "alice", base),
		{ID: "s2", Owner: "bob", Mode: domain.ModeReadonly, State: domain.SessionClosed, CreatedAt: base.Add(time.Nanosecond)},
		{ID: "s3", Owner: "ünïcode 'quoted' \"owner\"", Title: "title; DROP TABLE sessions; --", Mode: domain.ModeAuto, State: domain.SessionActive, CreatedAt: base.Add(-time.Hour)},
	}
	for _, want := range tests {
		if err := st.CreateSession(ctx, want); err != nil {
			t.Fatalf("CreateSession(%s): %v", want.ID, err)
		}
		got, err := st.GetSession(ctx, want.ID)
		if err != nil {
			t.Fatalf("GetSession(%s): %v", want.ID, err)
		}
		if !sameSession(got, want) {
			t.Errorf("GetSession(%s) = %+v, want %+v", want.ID, got, want)
		}
		if got.CreatedAt.Location() != time.UTC {
			t.Errorf("GetSession(%s).CreatedAt location = %v, want UTC", want.ID, got.CreatedAt.Location())
		}
	}
}

func testSessionDuplicate(t *testing.T, st ports.SessionStore) {
	ctx := ctxFor(t)
	first := session("dup", "alice", base)
	if err := st.CreateSession(ctx, first); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	second := session("dup", "mallory", base.Add(time.Hour))
	if err := st.CreateSession(ctx, second); err == nil {
		t.Fatalf("CreateSession(same id twice) error = nil, want an error")
	}
	got, err := st.GetSession(ctx, "dup")
	if err != nil {
		t.Fatalf("GetSession: %v", err)
	}
	if !sameSession(got, first) {
		t.Errorf("after a refused duplicate, GetSession = %+v, want the first %+v", got, first)
	}
}

func testSessionList(t *testing.T, st ports.SessionStore) {
	ctx := ctxFor(t)
	got, err := st.ListSessions(ctx, ports.SessionFilter{})
	if err != nil {
		t.Fatalf("ListSessions(empty store): %v", err)
	}
	if len(got) != 0 {
		t.Fatalf("ListSessions(empty store) = %d sessions, want 0", len(got))
	}
	// a1 and a2 share a creation time: the tie is broken by id, descending.
	for _, s := range []domain.Session{
		session("a0", "alice", base),
		session("b0", "bob", base.Add(1*time.Second)),
		session("a1", "alice", base.Add(2*time.Second)),
		session("a2", "alice", base.Add(2*time.Second)),
		session("b1", "bob", base.Add(3*time.Second)),
	} {
		if err := st.CreateSession(ctx, s); err != nil {
			t.Fatalf("CreateSession(%s): %v", s.ID, err)
		}
	}
	tests := []struct {
		name   string
		filter ports.SessionFilter
		want   []string
	}{
		{"all newest first", ports.SessionFilter{}, []string{"b1", "a2", "a1", "b0", "a0"}},
		{"owner", ports.SessionFilter{Owner: "alice"}, []string{"a2", "a1", "a0"}},
		{"limit", ports.SessionFilter{Page: ports.Page{Limit: 2}}, []string{"b1", "a2"}},
		{"owner and limit", ports.SessionFilter{Owner: "bob", Page: ports.Page{Limit: 1}}, []string{"b1"}},
		{"limit above count", ports.SessionFilter{Owner: "bob", Page: ports.Page{Limit: 10}}, []string{"b1", "b0"}},
		{"unknown owner", ports.SessionFilter{Owner: "carol"}, nil},
		{"projects", ports.SessionFilter{Projects: []string{"p-a0", "p-b1"}}, []string{"b1", "a0"}},
		{"owner or projects", ports.SessionFilter{Owner: "alice", Projects: []string{"p-b0"}}, []string{"a2", "a1", "b0", "a0"}},
		{"projects and limit", ports.SessionFilter{Projects: []string{"p-a0", "p-a1", "p-b0"}, Page: ports.Page{Limit: 2}}, []string{"a1", "b0"}},
		{"unknown project", ports.SessionFilter{Projects: []string{"p-zz"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := st.ListSessions(ctx, tt.filter)
			if err != nil {
				t.Fatalf("ListSessions(%+v): %v", tt.filter, err)
			}
			if ids := sessionIDs(got); fmt.Sprint(ids) != fmt.Sprint(tt.want) {
				t.Errorf("ListSessions(%+v) = %v, want %v", tt.filter, ids, tt.want)
			}
		})
	}
}

func sessionIDs(ss []domain.Session) []string {
	var ids []string
	for _, s := range ss {
		ids = append(ids, s.ID)
	}
	return ids
}

func testSessionDelete(t *testing.T, st ports.SessionStore) {
	ctx := ctxFor(t)
	for _, id := range []string{"keep", "drop"} {
		if err := st.CreateSession(ctx, session(id, "alice", base)); err != nil {
			t.Fatalf("CreateSession(%s): %v", id, err)
		}
	}
	if err := st.DeleteSession(ctx, "drop"); err != nil {
		t.Fatalf("DeleteSession(drop): %v", err)
	}
	if _, err := st.GetSession(ctx, "drop"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("GetSession(deleted) error = %v, want domain.ErrNotFound", err)
	}
	if _, err := st.GetSession(ctx, "keep"); err != nil {
		t.Errorf("GetSession(keep) after deleting another: %v", err)
	}
	if err := st.DeleteSession(ctx, "drop"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("DeleteSession(already deleted) error = %v, want domain.ErrNotFound", err)
	}
}

// WatchedSessionStore is a session store whose watcher reports session
// changes.
type WatchedSessionStore interface {
	ports.SessionStore
	ports.SessionModeStore
	ports.LoginSessionWatcher
}

// RunSessionWatcher checks that the watcher reports every session created,
// changed (its mode) or deleted, once committed, each then acknowledged by
// the listener: a session write waits for that to know every instance has
// forgotten what it kept (app.SessionRecords.KeepInMemory). A write refused
// reports nothing.
func RunSessionWatcher(t *testing.T, newStore Factory[WatchedSessionStore]) {
	st, ctx := newStore(t), ctxFor(t)
	checkReports(t, st, []watchedStep{
		{"create s1", func() error { return st.CreateSession(ctx, session("s1", "alice", base)) }},
		{"create s1 again (refused)", func() error {
			if err := st.CreateSession(ctx, session("s1", "alice", base)); err == nil {
				return errors.New("created twice")
			}
			return nil
		}},
		{"create s2", func() error { return st.CreateSession(ctx, session("s2", "bob", base)) }},
		{"mode of s1", func() error { return st.SetSessionMode(ctx, "s1", domain.ModeReadonly) }},
		{"delete s2", func() error { return st.DeleteSession(ctx, "s2") }},
	}, []string{ports.SessionChangeKey("s1"), ports.SessionChangeKey("s2"), ports.SessionChangeKey("s1"), ports.SessionChangeKey("s2")})
}

// watchedStep is one write whose report checkReports waits for.
type watchedStep struct {
	name string
	do   func() error
}

// checkReports makes steps while watching st and checks that the watcher
// reported want, in order, each report then acknowledged by st's one
// listener.
func checkReports(t *testing.T, st ports.LoginSessionWatcher, steps []watchedStep, want []string) {
	t.Helper()
	ctx := ctxFor(t)
	heard := make(chan string, 2*len(want)+4)
	live := make(chan bool, 8)
	watchCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		st.WatchLoginSessions(watchCtx, func(h string) { heard <- h }, func(l bool) { live <- l })
	}()
	t.Cleanup(func() { stop(); <-done })
	if !<-live {
		t.Fatal("watcher reported not live first")
	}
	for _, step := range steps {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
	}
	listeners, err := st.Listeners(ctx)
	if err != nil || len(listeners) != 1 {
		t.Fatalf("Listeners = %v, %v; want this store's one listener", listeners, err)
	}
	var reports, acked []string
	for len(reports) < len(want) || len(acked) < len(want) {
		select {
		case h := <-heard:
			if l, r, ok := ports.AckOf(h); ok {
				if l != listeners[0] || !slices.Contains(reports, r) {
					t.Errorf("acknowledgement %q: want one by %s of a report made before it", h, listeners[0])
				}
				acked = append(acked, r)
			} else {
				reports = append(reports, h)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the watcher reported %q and acknowledged %q, want %d of each", reports, acked, len(want))
		}
	}
	if !slices.Equal(reports, want) {
		t.Errorf("the watcher reported %q, want %q", reports, want)
	}
}
