// Package apptest holds suites that check a use case over each store
// adapter (the stores' own ports are checked by ports/porttest): every
// store runs them from its conformance tests.
package apptest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
	"github.com/agentauth/agentauth/ports/porttest"
)

// RunPasswordLimits checks the password-login limits of app.Login over
// instances that share a store: two Login use cases, one per handle, as two
// service instances would run them, against one identity provider that
// counts the guesses reaching it.
func RunPasswordLimits(t *testing.T, open porttest.SharedFactory[porttest.LoginStore]) {
	t.Run("ConcurrentGuessesAcrossInstances", func(t *testing.T) { testConcurrentGuesses(t, open) })
	t.Run("StrangerCannotLockOutTheUser", func(t *testing.T) { testNoLockOutFromElsewhere(t, open) })
}

// provider is an identity provider that knows alice's password "right",
// takes a while to answer (so concurrent guesses overlap) and counts the
// password grants it receives.
type provider struct {
	*mocks.MockIdentityProvider
	grants atomic.Int64
}

func newProvider(t *testing.T, delay time.Duration) *provider {
	p := &provider{MockIdentityProvider: mocks.NewMockIdentityProvider(gomock.NewController(t))}
	p.EXPECT().Ready().Return(nil).AnyTimes()
	p.EXPECT().PasswordGrant(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, user, pw string) (ports.TokenSet, error) {
		p.grants.Add(1)
		time.Sleep(delay)
		if user == "alice" && pw == "right" {
			return ports.TokenSet{Subject: "sub-alice", Username: "alice", AccessToken: "at", AccessExpiry: time.Now().Add(time.Hour)}, nil
		}
		return ports.TokenSet{}, fmt.Errorf("invalid_grant: %w", domain.ErrUnauthenticated)
	}).AnyTimes()
	return p
}

func logins(t *testing.T, stores []porttest.LoginStore, idp ports.IdentityProvider, failures int) []*app.Login {
	cfg := app.LoginConfig{PasswordLogin: true, SessionIdle: time.Hour, SessionMax: time.Hour, RefreshBefore: time.Minute,
		LoginFailures: failures, LoginWindow: 15 * time.Minute}
	out := make([]*app.Login, len(stores))
	for i, st := range stores {
		l, err := app.NewLogin(cfg, idp, st, st, st, app.SystemClock{})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = l
	}
	return out
}

// testConcurrentGuesses: 30 concurrent wrong guesses for one username,
// spread over two instances, reach the provider at most as often as the
// limits allow: from one address the per-address-and-username limit (5),
// from 30 addresses the per-username ceiling. Attempts waiting for the
// provider count, in the shared store, on every instance.
func testConcurrentGuesses(t *testing.T, open porttest.SharedFactory[porttest.LoginStore]) {
	tests := []struct {
		name       string
		failures   int
		addr       func(i int) string
		wantAtMost int64
	}{
		{"one address", 5, func(int) string { return "203.0.113.9" }, 5},
		{"thirty addresses", 1, func(i int) string { return fmt.Sprintf("198.51.100.%d", i) }, app.UserCeiling * 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idp := newProvider(t, 100*time.Millisecond)
			ls := logins(t, open(t, 2), idp, tt.failures)
			var wg sync.WaitGroup
			var limited atomic.Int64
			for i := range 30 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := ls[i%2].PasswordLogin(porttest.Context(t), "alice", fmt.Sprint("guess-", i), tt.addr(i))
					var ra *app.RetryAfter
					switch {
					case errors.As(err, &ra):
						limited.Add(1)
					case !errors.Is(err, app.ErrBadCredentials):
						t.Errorf("guess %d: got %v, want bad credentials or 429", i, err)
					}
				}()
			}
			wg.Wait()
			if got := idp.grants.Load(); got > tt.wantAtMost || got == 0 {
				t.Errorf("guesses that reached the provider = %d, want 1 to %d (limited: %d)", got, tt.wantAtMost, limited.Load())
			}
		})
	}
}

// testNoLockOutFromElsewhere: a stranger's failed guesses from one address
// lock that address out of the user's account, not the user logging in
// from another address; and one address's failures over many usernames
// lock that address only.
func testNoLockOutFromElsewhere(t *testing.T, open porttest.SharedFactory[porttest.LoginStore]) {
	idp := newProvider(t, 0)
	ls := logins(t, open(t, 2), idp, 5)
	ctx := porttest.Context(t)
	for i := range 5 {
		if _, err := ls[i%2].PasswordLogin(ctx, "alice", "wrong", "203.0.113.66"); !errors.Is(err, app.ErrBadCredentials) {
			t.Fatalf("stranger's guess %d: got %v, want bad credentials", i, err)
		}
	}
	var ra *app.RetryAfter
	if _, err := ls[0].PasswordLogin(ctx, "alice", "right", "203.0.113.66"); !errors.As(err, &ra) {
		t.Errorf("the stranger's address after 5 failures: got %v, want 429", err)
	}
	if _, err := ls[1].PasswordLogin(ctx, "alice", "right", "192.0.2.10"); err != nil {
		t.Errorf("alice from her own address after a stranger's 5 failures: got %v, want a login", err)
	}
	// One address guessing over many usernames is stopped at the
	// per-address limit, and only that address.
	addrLimit := app.AddressLimit * 5
	for i := range addrLimit {
		if _, err := ls[i%2].PasswordLogin(ctx, fmt.Sprint("user-", i), "wrong", "203.0.113.77"); !errors.Is(err, app.ErrBadCredentials) {
			t.Fatalf("spray %d: got %v, want bad credentials", i, err)
		}
	}
	if _, err := ls[0].PasswordLogin(ctx, "someone-new", "x", "203.0.113.77"); !errors.As(err, &ra) {
		t.Errorf("the spraying address after %d failures: got %v, want 429", addrLimit, err)
	}
	if _, err := ls[0].PasswordLogin(ctx, "alice", "right", "192.0.2.11"); err != nil {
		t.Errorf("another address after the spray: got %v, want a login", err)
	}
}
