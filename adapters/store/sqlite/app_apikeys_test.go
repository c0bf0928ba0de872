package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/mock/gomock"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
	"github.com/agentauth/agentauth/ports/porttest"

	"github.com/agentauth/agentauth/internal/testwait"
)

// movingClock is a clock a test moves.
type movingClock struct{ at atomic.Int64 }

func (c *movingClock) Now() time.Time      { return time.Unix(0, c.at.Load()).UTC() }
func (c *movingClock) add(d time.Duration) { c.at.Add(int64(d)) }
func newMovingClock(t time.Time) *movingClock {
	c := &movingClock{}
	c.at.Store(t.UnixNano())
	return c
}

// countingKeys is the real SQLite store, counting the reads and writes a
// key's use makes.
type countingKeys struct {
	*sqlite.Store
	keyReads, ownerReads, touches atomic.Int32
}

func (c *countingKeys) GetAPIKey(ctx context.Context, id string) (domain.APIKey, error) {
	c.keyReads.Add(1)
	return c.Store.GetAPIKey(ctx, id)
}

func (c *countingKeys) GetKeyOwner(ctx context.Context, subject string) (domain.KeyOwner, error) {
	c.ownerReads.Add(1)
	return c.Store.GetKeyOwner(ctx, subject)
}

func (c *countingKeys) TouchAPIKey(ctx context.Context, id string, at time.Time) error {
	c.touches.Add(1)
	return c.Store.TouchAPIKey(ctx, id, at)
}

func (c *countingKeys) reads() int32 { return c.keyReads.Load() + c.ownerReads.Load() }

type keyFixture struct {
	keys  *app.APIKeys
	store *countingKeys
	clock *movingClock
}

var keyStart = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// newKeyFixture is the use case over a real SQLite store, with keys kept
// in memory on the store's watcher (through the hub, as served) unless
// watch is given.
func newKeyFixture(t *testing.T, watch ports.LoginSessionWatcher) *keyFixture {
	t.Helper()
	st, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(t.TempDir(), "agentauth.db")), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeStore)
	authz, err := domain.NewAuthorizer([]domain.CustomRole{{Name: "OPS", Permissions: []domain.Permission{domain.PermMeRead, domain.PermMetricsRead}}})
	if err != nil {
		t.Fatal(err)
	}
	f := &keyFixture{store: &countingKeys{Store: st}, clock: newMovingClock(keyStart)}
	f.keys, err = app.NewAPIKeys(app.APIKeysConfig{MaxTTL: 90 * 24 * time.Hour, MaxPerOwner: 3}, f.store, st, authz, f.clock)
	if err != nil {
		t.Fatal(err)
	}
	if watch == nil {
		hub, stop := app.NewWatchHub(st)
		t.Cleanup(stop)
		watch = hub
	}
	t.Cleanup(f.keys.KeepInMemory(watch))
	waitLive(t, f)
	return f
}

// waitLive waits until the memory serves: a key used twice is read once.
func waitLive(t *testing.T, f *keyFixture) {
	t.Helper()
	ctx := porttest.Context(t)
	n := 0
	testwait.Until(t, 30*time.Second, "the key memory live", func() (bool, string) {
		n++
		probe := domain.Principal{Subject: fmt.Sprintf("probe-%d", n), Roles: []domain.Role{domain.RoleUser}}
		before := f.store.ownerReads.Load()
		_, _ = f.keys.Observe(ctx, probe)
		_, _ = f.keys.Observe(ctx, probe)
		reads := f.store.ownerReads.Load() - before
		return reads == 1, fmt.Sprintf("a key used twice read %d times", reads)
	})
}

var alice = domain.Principal{Subject: "alice", Roles: []domain.Role{domain.RoleLead}, Method: domain.MethodOIDC}

func (f *keyFixture) create(t *testing.T, p domain.Principal, req app.KeyRequest) app.NewKey {
	t.Helper()
	if req.Name == "" {
		req.Name = "ci"
	}
	if req.ExpiresAt.IsZero() {
		req.ExpiresAt = f.clock.Now().Add(24 * time.Hour)
	}
	k, err := f.keys.Create(porttest.Context(t), p, req)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return k
}

func refusal(err error) string {
	var r *domain.TokenRefusal
	if errors.As(err, &r) {
		return r.Code
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// TestKeyUseFromMemory: the first use reads the store, later uses read
// nothing; a wrong checksum is refused without a read.
func TestKeyUseFromMemory(t *testing.T) {
	f := newKeyFixture(t, nil)
	ctx := porttest.Context(t)
	k := f.create(t, alice, app.KeyRequest{Permissions: []domain.Permission{domain.PermMeRead, domain.PermSessionsRead}})
	for i := range 3 {
		before := f.store.reads()
		p, err := f.keys.Authenticate(ctx, k.Secret)
		if err != nil {
			t.Fatalf("use %d: %v", i, err)
		}
		if p.Subject != "alice" || p.Method != domain.MethodManagedKey || p.Key == nil || p.Key.ID != k.Key.ID {
			t.Fatalf("use %d: principal %+v", i, p)
		}
		if got, want := f.store.reads()-before, map[bool]int32{true: 2, false: 0}[i == 0]; got != want {
			t.Errorf("use %d read the store %d times, want %d", i, got, want)
		}
	}
	bad := []byte(k.Secret)
	bad[len(bad)-1] ^= 1
	before := f.store.reads()
	if _, err := f.keys.Authenticate(ctx, string(bad)); refusal(err) != domain.ReasonKeyMalformed || !errors.Is(err, domain.ErrUnauthenticated) {
		t.Errorf("wrong checksum: %v, want 401 %s", err, domain.ReasonKeyMalformed)
	}
	if got := f.store.reads() - before; got != 0 {
		t.Errorf("a wrong checksum read the store %d times", got)
	}
}

// TestKeyLifecycle walks what changes a key's answer, each seen on the
// next use, from memory.
func TestKeyLifecycle(t *testing.T) {
	tests := []struct {
		name string
		// change runs after a first, remembered, use.
		change   func(t *testing.T, f *keyFixture, k app.NewKey)
		wantCode string
		want     []domain.Permission
	}{
		{"unchanged", func(*testing.T, *keyFixture, app.NewKey) {}, "", []domain.Permission{domain.PermMeRead, domain.PermSessionsRead, domain.PermSessionsTeam}},
		{"revoked", func(t *testing.T, f *keyFixture, k app.NewKey) {
			if confirmed, err := f.keys.Revoke(porttest.Context(t), alice, k.Key.ID); err != nil || !confirmed {
				t.Fatalf("Revoke = %v, %v; want confirmed", confirmed, err)
			}
		}, domain.ReasonKeyRevoked, nil},
		{"expired", func(t *testing.T, f *keyFixture, k app.NewKey) { f.clock.add(24 * time.Hour) }, domain.ReasonKeyExpired, nil},
		{"owner demoted to USER: narrower at once", func(t *testing.T, f *keyFixture, k app.NewKey) {
			demoted := alice
			demoted.Roles = []domain.Role{domain.RoleUser}
			if changed, err := f.keys.Observe(porttest.Context(t), demoted); err != nil || !changed {
				t.Fatalf("Observe(demoted) = %v, %v; want a change", changed, err)
			}
			if changed, err := f.keys.Observe(porttest.Context(t), demoted); err != nil || changed {
				t.Fatalf("Observe(demoted) again = %v, %v; want no change", changed, err)
			}
		}, "", []domain.Permission{domain.PermMeRead, domain.PermSessionsRead}},
		{"owner logged out by the provider", func(t *testing.T, f *keyFixture, k app.NewKey) {
			if confirmed, err := f.keys.SetOwnerDisabled(porttest.Context(t), "alice", true); err != nil || !confirmed {
				t.Fatalf("SetOwnerDisabled = %v, %v; want confirmed", confirmed, err)
			}
		}, domain.ReasonKeyOwnerGone, nil},
		{"owner logged out, then signed in again", func(t *testing.T, f *keyFixture, k app.NewKey) {
			ctx := porttest.Context(t)
			if _, err := f.keys.SetOwnerDisabled(ctx, "alice", true); err != nil {
				t.Fatal(err)
			}
			if _, err := f.keys.Observe(ctx, alice); err != nil {
				t.Fatal(err)
			}
		}, "", []domain.Permission{domain.PermMeRead, domain.PermSessionsRead, domain.PermSessionsTeam}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newKeyFixture(t, nil)
			ctx := porttest.Context(t)
			k := f.create(t, alice, app.KeyRequest{Permissions: []domain.Permission{domain.PermMeRead, domain.PermSessionsRead, domain.PermSessionsTeam}})
			if _, err := f.keys.Authenticate(ctx, k.Secret); err != nil {
				t.Fatal(err)
			}
			tt.change(t, f, k)
			p, err := f.keys.Authenticate(ctx, k.Secret)
			if got := refusal(err); got != tt.wantCode {
				t.Fatalf("after the change: %v, want %q", err, tt.wantCode)
			}
			if tt.wantCode != "" {
				if !errors.Is(err, domain.ErrUnauthenticated) {
					t.Errorf("%v is not a 401", err)
				}
				return
			}
			if got := p.Key.Permissions.List(); !slices.Equal(got, tt.want) {
				t.Errorf("permissions %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCreateKeyRefusals(t *testing.T) {
	f := newKeyFixture(t, nil)
	ctx := porttest.Context(t)
	now := f.clock.Now()
	admin := domain.Principal{Subject: "root", Roles: []domain.Role{domain.RoleAdmin}}
	if _, err := f.keys.CreateServiceAccount(ctx, "deployer", "OPS"); err != nil {
		t.Fatal(err)
	}
	keyed := alice
	keyed.Key = &domain.KeyScope{ID: "aaaaaaaaaaaa", Owner: "alice"}
	tests := []struct {
		name     string
		p        domain.Principal
		req      app.KeyRequest
		wantErr  error
		wantCode string
	}{
		{"wider than the owner", alice, app.KeyRequest{Name: "x", Permissions: []domain.Permission{domain.PermAuditRead}, ExpiresAt: now.Add(time.Hour)}, domain.ErrForbidden, domain.ReasonKeyWiderThanOwner},
		{"no expiry", alice, app.KeyRequest{Name: "x"}, domain.ErrInvalidInput, domain.ReasonKeyExpiry},
		{"past the maximum", alice, app.KeyRequest{Name: "x", ExpiresAt: now.Add(91 * 24 * time.Hour)}, domain.ErrInvalidInput, domain.ReasonKeyExpiry},
		{"in the past", alice, app.KeyRequest{Name: "x", ExpiresAt: now.Add(-time.Minute)}, domain.ErrInvalidInput, domain.ReasonKeyExpiry},
		{"no name", alice, app.KeyRequest{ExpiresAt: now.Add(time.Hour)}, domain.ErrInvalidInput, ""},
		{"a key makes no key", keyed, app.KeyRequest{Name: "x", ExpiresAt: now.Add(time.Hour)}, domain.ErrForbidden, domain.ReasonKeyCannotMakeKeys},
		{"a debug principal makes no key", domain.Principal{Subject: "debug-admin", Roles: []domain.Role{domain.RoleAdmin}, Method: domain.MethodDebug},
			app.KeyRequest{Name: "x", ExpiresAt: now.Add(time.Hour)}, domain.ErrForbidden, domain.ReasonKeyCannotMakeKeys},
		{"a LEAD makes no service-account key", alice, app.KeyRequest{Name: "x", ServiceAccount: "deployer", ExpiresAt: now.Add(time.Hour)}, domain.ErrForbidden, ""},
		{"unknown service account", admin, app.KeyRequest{Name: "x", ServiceAccount: "nobody", ExpiresAt: now.Add(time.Hour)}, domain.ErrNotFound, ""},
		{"service account key wider than its role", admin, app.KeyRequest{Name: "x", ServiceAccount: "deployer", Permissions: []domain.Permission{domain.PermAuditRead}, ExpiresAt: now.Add(time.Hour)}, domain.ErrForbidden, domain.ReasonKeyWiderThanOwner},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.keys.Create(ctx, tt.p, tt.req)
			if !errors.Is(err, tt.wantErr) || tt.wantCode != "" && refusal(err) != tt.wantCode {
				t.Errorf("Create = %v, want %v (%s)", err, tt.wantErr, tt.wantCode)
			}
		})
	}
	t.Run("per-owner limit", func(t *testing.T) {
		for range 3 {
			f.create(t, alice, app.KeyRequest{})
		}
		_, err := f.keys.Create(ctx, alice, app.KeyRequest{Name: "x", ExpiresAt: now.Add(time.Hour)})
		if !errors.Is(err, domain.ErrConflict) || refusal(err) != domain.ReasonKeyLimit {
			t.Errorf("fourth key = %v, want 409 %s", err, domain.ReasonKeyLimit)
		}
	})
	t.Run("service account keys outlive their maker", func(t *testing.T) {
		k := f.create(t, admin, app.KeyRequest{ServiceAccount: "deployer"})
		p, err := f.keys.Authenticate(ctx, k.Secret)
		if err != nil || p.Subject != "service:deployer" || !slices.Equal(p.Roles, []domain.Role{"OPS"}) || k.Key.CreatedBy != "root" {
			t.Fatalf("service key: %+v, %v (created by %s)", p, err, k.Key.CreatedBy)
		}
		if got := p.Key.Permissions.List(); !slices.Equal(got, []domain.Permission{domain.PermMeRead, domain.PermMetricsRead}) {
			t.Errorf("permissions %v", got)
		}
	})
}

// TestLastUsedOncePerMinute: uses within a minute write nothing.
func TestLastUsedOncePerMinute(t *testing.T) {
	f := newKeyFixture(t, nil)
	ctx := porttest.Context(t)
	k := f.create(t, alice, app.KeyRequest{})
	for _, step := range []struct {
		after time.Duration
		want  int32
	}{{0, 1}, {10 * time.Second, 1}, {49 * time.Second, 1}, {2 * time.Second, 2}, {30 * time.Second, 2}} {
		f.clock.add(step.after)
		if _, err := f.keys.Authenticate(ctx, k.Secret); err != nil {
			t.Fatal(err)
		}
		if got := f.store.touches.Load(); got != step.want {
			t.Errorf("after +%s: %d writes of the last use, want %d", step.after, got, step.want)
		}
	}
	page, err := f.keys.List(ctx, alice, app.PageRequest{})
	if list := page.Items; err != nil || len(list) != 1 || !list[0].LastUsed.Equal(keyStart.Add(61*time.Second)) || list[0].Hash != nil {
		t.Errorf("List = %+v, %v; want last used %v and no hash", page, err, keyStart.Add(61*time.Second))
	}
}

// stillWatcher is a watcher that never goes live (its connection is
// down), while another instance listens.
type stillWatcher struct{}

func (stillWatcher) WatchLoginSessions(ctx context.Context, _ func(string), live func(bool)) {
	<-ctx.Done()
	live(false)
}

func (stillWatcher) Listeners(context.Context) ([]string, error) { return []string{"4242"}, nil }

// TestKeysNotFromMemoryWhileNotLive: with the watcher down, every use
// reads the store.
func TestKeysNotFromMemoryWhileNotLive(t *testing.T) {
	st, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(t.TempDir(), "agentauth.db")), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeStore)
	authz, _ := domain.NewAuthorizer(nil)
	store := &countingKeys{Store: st}
	keys, err := app.NewAPIKeys(app.APIKeysConfig{MaxTTL: time.Hour, MaxPerOwner: 3}, store, st, authz, newMovingClock(keyStart))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(keys.KeepInMemory(stillWatcher{}))
	ctx := porttest.Context(t)
	k, err := keys.Create(ctx, alice, app.KeyRequest{Name: "x", ExpiresAt: keyStart.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		before := store.keyReads.Load()
		if _, err := keys.Authenticate(ctx, k.Secret); err != nil {
			t.Fatal(err)
		}
		if got := store.keyReads.Load() - before; got != 1 {
			t.Errorf("use %d read the key %d times, want 1", i, got)
		}
	}
	// Another instance listens, and this one cannot hear it acknowledge:
	// the revocation is made but not confirmed.
	confirmed, err := keys.Revoke(ctx, alice, k.Key.ID)
	if err != nil || confirmed {
		t.Errorf("Revoke while not listening = %v, %v; want made, not confirmed", confirmed, err)
	}
}

// TestWatchHubOrder: a subscriber joining a live hub hears live(true)
// before any report; every subscriber hears every report.
func TestWatchHubOrder(t *testing.T) {
	src := &manualWatcher{ready: make(chan struct{})}
	hub, stop := app.NewWatchHub(src)
	defer stop()
	<-src.ready
	src.live(true)
	var mu sync.Mutex
	var events [2][]string
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	joined := make(chan struct{}, 2)
	for i := range 2 {
		wg.Go(func() {
			hub.WatchLoginSessions(ctx, func(r string) { mu.Lock(); events[i] = append(events[i], r); mu.Unlock() },
				func(l bool) {
					mu.Lock()
					events[i] = append(events[i], map[bool]string{true: "live", false: "down"}[l])
					mu.Unlock()
					if l {
						joined <- struct{}{}
					}
				})
		})
	}
	<-joined
	<-joined
	src.changed("key:a")
	src.live(false)
	cancel()
	wg.Wait()
	for i, got := range events {
		if want := []string{"live", "key:a", "down", "down"}; !slices.Equal(got, want) {
			t.Errorf("subscriber %d heard %v, want %v", i, got, want)
		}
	}
}

type manualWatcher struct {
	ready   chan struct{}
	changed func(string)
	live    func(bool)
}

func (m *manualWatcher) WatchLoginSessions(ctx context.Context, changed func(string), live func(bool)) {
	m.changed, m.live = changed, live
	close(m.ready)
	<-ctx.Done()
}

func (m *manualWatcher) Listeners(context.Context) ([]string, error) { return nil, nil }

// TestBackchannelLogoutSuspendsKeys: a back-channel logout naming a subject
// stops its keys on every instance before it is answered; the owner's next
// sign-in brings them back.
func TestBackchannelLogoutSuspendsKeys(t *testing.T) {
	f := newKeyFixture(t, nil)
	ctx := porttest.Context(t)
	k := f.create(t, alice, app.KeyRequest{})
	if _, err := f.keys.Authenticate(ctx, k.Secret); err != nil {
		t.Fatal(err)
	}
	idp := mocks.NewMockIdentityProvider(gomock.NewController(t))
	idp.EXPECT().VerifyLogoutToken(gomock.Any(), "raw").Return(ports.LogoutToken{ID: "j1", SessionID: "kc-sid", Subject: "alice",
		AcceptedUntil: keyStart.Add(time.Minute)}, nil)
	login, err := app.NewLogin(app.LoginConfig{SessionIdle: time.Hour, SessionMax: time.Hour}, idp, f.store.Store, f.store.Store, f.store.Store, f.clock)
	if err != nil {
		t.Fatal(err)
	}
	login.SuspendKeysOnLogout(f.keys)
	if _, err := login.BackchannelLogout(ctx, "raw"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.keys.Authenticate(ctx, k.Secret); refusal(err) != domain.ReasonKeyOwnerGone {
		t.Fatalf("after the logout: %v, want %s", err, domain.ReasonKeyOwnerGone)
	}
	if _, err := f.keys.Observe(ctx, alice); err != nil {
		t.Fatal(err)
	}
	if _, err := f.keys.Authenticate(ctx, k.Secret); err != nil {
		t.Fatalf("after signing in again: %v", err)
	}
}

// TestPersonNames: the name a person's credential gives is kept with its
// owner record as a label: known beside its subject (PersonNames), carried
// by its keys' principal, renamed by a later sign-in without counting as a
// change of roles, never erased by a credential naming nobody, and never
// part of what its keys may do.
func TestPersonNames(t *testing.T) {
	f := newKeyFixture(t, nil)
	ctx := porttest.Context(t)
	named := alice
	named.Name = "Alice <script>alert(1)</script>"
	k := f.create(t, named, app.KeyRequest{Permissions: []domain.Permission{domain.PermMeRead}})
	svc, err := f.keys.CreateServiceAccount(ctx, "deploy-bot", "OPS")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.keys.Remember(ctx, domain.Principal{Subject: "bob", Roles: []domain.Role{domain.RoleUser}}); err != nil {
		t.Fatal(err)
	}
	names, err := f.keys.PersonNames(ctx, "alice", svc.Subject, "bob", "nobody", "", "alice")
	if err != nil || len(names) != 2 || names["alice"] != named.Name || names[svc.Subject] != "deploy-bot" {
		t.Fatalf("PersonNames = %v, %v; want alice and the service account named, bob (no name) and nobody left out", names, err)
	}
	p, err := f.keys.Authenticate(ctx, k.Secret)
	if err != nil || p.Name != named.Name || p.Subject != "alice" {
		t.Fatalf("key principal %+v, %v; want alice named %q", p, err, named.Name)
	}
	before := p.Key.Permissions

	tests := []struct {
		name, credential, want string
	}{
		{"a new name is kept, not a change of roles", "Alice Liddell", "Alice Liddell"},
		{"the same name writes nothing", "Alice Liddell", "Alice Liddell"},
		{"a credential naming nobody keeps the name", "", "Alice Liddell"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := alice
			seen.Name = tt.credential
			if changed, err := f.keys.Observe(ctx, seen); err != nil || changed {
				t.Fatalf("Observe = %t, %v; want no change of roles", changed, err)
			}
			o, err := f.store.GetKeyOwner(ctx, "alice")
			if err != nil || o.Name != tt.want || !slices.Equal(o.Roles, alice.Roles) {
				t.Fatalf("owner record %+v, %v; want named %q with alice's roles", o, err, tt.want)
			}
			// Read after the store's report reaches the memory.
			testwait.Until(t, 30*time.Second, "the key's principal renamed", func() (bool, string) {
				p, err := f.keys.Authenticate(ctx, k.Secret)
				return err == nil && p.Name == tt.want, fmt.Sprintf("%+v, %v", p, err)
			})
			p, _ := f.keys.Authenticate(ctx, k.Secret)
			if p.Key.Permissions != before || !slices.Equal(p.Roles, alice.Roles) {
				t.Errorf("renamed: roles %v permissions %v; want %v and %v as before", p.Roles, p.Key.Permissions, alice.Roles, before)
			}
		})
	}
}
