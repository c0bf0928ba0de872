package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports/porttest"
)

// TestKeyRevokedWhileNotListeningIsNotServedFromMemory: an instance that
// lost its notifications forgets the keys it remembered and reads them from
// the database until it listens again, so a revocation it could not hear of
// is refused at once.
func TestKeyRevokedWhileNotListeningIsNotServedFromMemory(t *testing.T) {
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	ctx := porttest.Context(t)
	admin, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	authz, _ := domain.NewAuthorizer(nil)
	keys, err := app.NewAPIKeys(app.APIKeysConfig{MaxTTL: time.Hour, MaxPerOwner: 5}, a, a, authz, app.SystemClock{})
	if err != nil {
		t.Fatal(err)
	}
	w := newLiveSignal(a)
	t.Cleanup(keys.KeepInMemory(w))
	waitFor(t, w.live, "watcher listening")
	owner := domain.Principal{Subject: "alice", Roles: []domain.Role{domain.RoleUser}}
	k, err := keys.Create(ctx, owner, app.KeyRequest{Name: "ci", ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Authenticate(ctx, k.Secret); err != nil { // remembered
		t.Fatalf("first use: %v", err)
	}
	cutListeners(t, admin)
	waitFor(t, w.lost, "watcher reporting the lost connection")
	if err := b.RevokeAPIKey(ctx, k.Key.ID, time.Now()); err != nil { // unheard by a
		t.Fatal(err)
	}
	var r *domain.TokenRefusal
	if _, err := keys.Authenticate(ctx, k.Secret); !errors.As(err, &r) || r.Code != domain.ReasonKeyRevoked {
		t.Errorf("while not listening: %v, want %s", err, domain.ReasonKeyRevoked)
	}
	waitFor(t, w.live, "watcher listening again")
	if _, err := keys.Authenticate(ctx, k.Secret); !errors.As(err, &r) || r.Code != domain.ReasonKeyRevoked {
		t.Errorf("after listening again: %v, want %s", err, domain.ReasonKeyRevoked)
	}
}
