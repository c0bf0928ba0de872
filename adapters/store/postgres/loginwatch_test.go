package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/adapters/store/postgres"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
	"github.com/agentauth/agentauth/ports/porttest"
)

// liveSignal passes the store's watcher through and tells the test when it
// is listening.
type liveSignal struct {
	*postgres.Store
	live chan struct{}
}

func (w liveSignal) WatchLoginSessions(ctx context.Context, changed func(string), live func(bool)) {
	w.Store.WatchLoginSessions(ctx, changed, func(l bool) {
		live(l)
		if l {
			select {
			case w.live <- struct{}{}:
			default:
			}
		}
	})
}

// TestSessionEndedOnOneInstanceIsRefusedByTheOther: two instances on one
// PostgreSQL database keep cookie sessions in memory. A session used on A
// and then logged out on B, or refreshed on B, is forgotten by A: A
// refuses (or re-reads) it once PostgreSQL has delivered B's notification,
// which the test bounds at 2 s and logs.
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
		w := liveSignal{st, make(chan struct{}, 1)}
		t.Cleanup(l.KeepSessionsInMemory(w))
		select {
		case <-w.live:
		case <-time.After(10 * time.Second):
			t.Fatal("watcher not listening after 10 s")
		}
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
	for {
		_, err := a.Authenticate(ctx, cookie)
		if errors.Is(err, domain.ErrUnauthenticated) {
			t.Logf("A refused the session %v after B's logout returned", time.Since(start))
			return
		}
		if time.Since(start) > 2*time.Second {
			t.Fatalf("A still accepts the session 2 s after the logout on B: %v", err)
		}
		time.Sleep(100 * time.Microsecond)
	}
}
