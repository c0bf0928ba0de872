package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/golang/mock/gomock"
	"github.com/jackc/pgx/v5"

	"github.com/agentauth/agentauth/adapters/store/postgres"
	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
	"github.com/agentauth/agentauth/ports/porttest"

	"github.com/agentauth/agentauth/internal/testwait"
)

// liveSignal passes the store's watcher through and tells the test when it
// starts or stops listening.
type liveSignal struct {
	*postgres.Store
	live, lost chan struct{}
}

func newLiveSignal(st *postgres.Store) liveSignal {
	return liveSignal{st, make(chan struct{}, 1), make(chan struct{}, 1)}
}

func (w liveSignal) WatchLoginSessions(ctx context.Context, changed func(string), live func(bool)) {
	w.Store.WatchLoginSessions(ctx, changed, func(l bool) {
		live(l)
		ch := w.lost
		if l {
			ch = w.live
		}
		select {
		case ch <- struct{}{}:
		default:
		}
	})
}

func waitFor(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10 s", what)
	}
}

// TestSessionEndedOnOneInstanceIsRefusedByTheOther: two instances on one
// PostgreSQL database keep cookie sessions in memory. A session used on A
// and then logged out on B, or refreshed on B, is forgotten by A: A
// refuses (or re-reads) it once PostgreSQL has delivered B's notification,
// which the test logs.
func TestSessionEndedOnOneInstanceIsRefusedByTheOther(t *testing.T) {
	stores := sharedStores[*postgres.Store](t, 2)
	now := time.Now()
	idp := mocks.NewMockIdentityProvider(gomock.NewController(t))
	idp.EXPECT().Logout(gomock.Any(), gomock.Any()).Return(nil).AnyTimes()
	idp.EXPECT().EndSessionURL(gomock.Any()).Return("").AnyTimes()
	cfg := app.LoginConfig{SessionIdle: time.Hour, SessionMax: 8 * time.Hour, RefreshBefore: time.Minute}
	logins := make([]*app.Login, 2)
	for i, st := range stores {
		l, err := app.NewLogin(cfg, idp, st, st, st, app.SystemClock{})
		if err != nil {
			t.Fatal(err)
		}
		w := newLiveSignal(st)
		t.Cleanup(l.KeepSessionsInMemory(w))
		waitFor(t, w.live, "watcher listening")
		logins[i] = l
	}
	a, b := logins[0], logins[1]
	ctx := porttest.Context(t)
	const cookie = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ"
	session := ports.LoginSession{IDHash: app.Digest(cookie), Version: 1, CreatedAt: now, LastSeen: now, ExpiresAt: now.Add(time.Hour),
		Tokens: ports.TokenSet{Subject: "alice", Roles: domain.RoleExtraction{Roles: []domain.Role{domain.RoleUser}}, AccessToken: "at",
			RefreshToken: "rt", IDToken: "it", AccessExpiry: now.Add(30 * time.Minute)}}
	if err := stores[0].CreateLoginSession(ctx, session); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second from memory
		if _, err := a.Authenticate(ctx, cookie); err != nil {
			t.Fatalf("A: %v", err)
		}
	}
	if _, _, err := b.Logout(ctx, cookie); err != nil {
		t.Fatalf("logout on B: %v", err)
	}
	start := time.Now()
	testwait.Until(t, 30*time.Second, "A refuses the session logged out on B", func() (bool, string) {
		_, err := a.Authenticate(ctx, cookie)
		return errors.Is(err, domain.ErrUnauthenticated), fmt.Sprint(err)
	})
	t.Logf("A refused the session %v after B's logout returned", time.Since(start))
}

// TestSessionChangedWhileNotListeningIsNotServedFromMemory: when the
// listening connection is lost, the instance forgets what it remembered and
// reads sessions from the database until it listens again, so a logout it
// could not hear of is still refused.
func TestSessionChangedWhileNotListeningIsNotServedFromMemory(t *testing.T) {
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	ctx := porttest.Context(t)
	admin, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	login, err := app.NewLogin(app.LoginConfig{SessionIdle: time.Hour, SessionMax: 8 * time.Hour, RefreshBefore: time.Minute},
		nil, a, a, a, app.SystemClock{})
	if err != nil {
		t.Fatal(err)
	}
	w := newLiveSignal(a)
	t.Cleanup(login.KeepSessionsInMemory(w))
	waitFor(t, w.live, "watcher listening")
	now := time.Now()
	const cookie = "bcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQR"
	session := ports.LoginSession{IDHash: app.Digest(cookie), Version: 1, CreatedAt: now, LastSeen: now, ExpiresAt: now.Add(time.Hour),
		Tokens: ports.TokenSet{Subject: "alice", Roles: domain.RoleExtraction{Roles: []domain.Role{domain.RoleUser}}, AccessToken: "at",
			RefreshToken: "rt", IDToken: "it", AccessExpiry: now.Add(30 * time.Minute)}}
	if err := b.CreateLoginSession(ctx, session); err != nil {
		t.Fatal(err)
	}
	if _, err := login.Authenticate(ctx, cookie); err != nil { // remembered
		t.Fatalf("first use: %v", err)
	}
	cutListeners(t, admin)
	waitFor(t, w.lost, "watcher reporting the lost connection")
	if err := b.DeleteLoginSession(ctx, session.IDHash); err != nil { // unheard by a
		t.Fatal(err)
	}
	if _, err := login.Authenticate(ctx, cookie); !errors.Is(err, domain.ErrUnauthenticated) {
		t.Errorf("while not listening: %v, want ErrUnauthenticated", err)
	}
	waitFor(t, w.live, "watcher listening again")
	if _, err := login.Authenticate(ctx, cookie); !errors.Is(err, domain.ErrUnauthenticated) {
		t.Errorf("after listening again: %v, want ErrUnauthenticated", err)
	}
}

// cutListeners ends every listening connection of the test's schema, as a
// network cut or a database restart would (each registers itself in
// key_listeners).
func cutListeners(t *testing.T, admin *pgx.Conn) {
	t.Helper()
	if _, err := admin.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM key_listeners`); err != nil {
		t.Fatal(err)
	}
}

// TestLogoutRefusedEverywhereWhenAnswered: a logout on B is answered only
// once every listening instance has acknowledged the session's end, so A
// refuses the cookie on the first request sent after B answered. Fifty
// rounds, each with a new session A serves from memory.
func TestLogoutRefusedEverywhereWhenAnswered(t *testing.T) {
	stores := sharedStores[*postgres.Store](t, 2)
	idp := mocks.NewMockIdentityProvider(gomock.NewController(t))
	idp.EXPECT().Logout(gomock.Any(), gomock.Any()).Return(nil).AnyTimes()
	idp.EXPECT().EndSessionURL(gomock.Any()).Return("").AnyTimes()
	cfg := app.LoginConfig{SessionIdle: time.Hour, SessionMax: 8 * time.Hour, RefreshBefore: time.Minute}
	logins := make([]*app.Login, 2)
	for i, st := range stores {
		l, err := app.NewLogin(cfg, idp, st, st, st, app.SystemClock{})
		if err != nil {
			t.Fatal(err)
		}
		w := newLiveSignal(st)
		t.Cleanup(l.KeepSessionsInMemory(w))
		waitFor(t, w.live, "watcher listening")
		logins[i] = l
	}
	a, b := logins[0], logins[1]
	ctx := porttest.Context(t)
	for round := range 50 {
		now := time.Now()
		cookie := fmt.Sprintf("cdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNO%04d", round)
		session := ports.LoginSession{IDHash: app.Digest(cookie), Version: 1, CreatedAt: now, LastSeen: now, ExpiresAt: now.Add(time.Hour),
			Tokens: ports.TokenSet{Subject: "alice", Roles: domain.RoleExtraction{Roles: []domain.Role{domain.RoleUser}}, AccessToken: "at",
				RefreshToken: "rt", IDToken: "it", AccessExpiry: now.Add(30 * time.Minute)}}
		if err := stores[0].CreateLoginSession(ctx, session); err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second from memory
			if _, err := a.Authenticate(ctx, cookie); err != nil {
				t.Fatalf("round %d: A: %v", round, err)
			}
		}
		if _, _, err := b.Logout(ctx, cookie); err != nil {
			t.Fatalf("round %d: logout on B: %v", round, err)
		}
		if _, err := a.Authenticate(ctx, cookie); !errors.Is(err, domain.ErrUnauthenticated) {
			t.Fatalf("round %d: A right after B answered the logout: %v, want ErrUnauthenticated", round, err)
		}
	}
}
