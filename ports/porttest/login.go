package porttest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// LoginStore is everything the OIDC login use case needs from a store.
type LoginStore interface {
	ports.LoginSessionStore
	ports.AuthRequestStore
	ports.LoginThrottle
}

// RunLoginStore checks the login ports of a store.
func RunLoginStore(t *testing.T, newStore Factory[LoginStore]) {
	t.Run("SessionRoundTrip", func(t *testing.T) { testLoginRoundTrip(t, newStore(t)) })
	t.Run("SessionVersioning", func(t *testing.T) { testLoginVersioning(t, newStore(t)) })
	t.Run("SessionTouchDeleteSweep", func(t *testing.T) { testLoginLifecycle(t, newStore(t)) })
	t.Run("AuthRequestSingleUse", func(t *testing.T) { testAuthRequest(t, newStore(t)) })
	t.Run("Throttle", func(t *testing.T) { testThrottle(t, newStore(t)) })
	t.Run("ThrottleForgetsOtherKeys", func(t *testing.T) { testFailuresOfOtherKeysForgotten(t, newStore(t)) })
	t.Run("SessionsOfProviderSession", func(t *testing.T) { testSessionsOfProviderSession(t, newStore(t)) })
	t.Run("LogoutTokenSingleUse", func(t *testing.T) { testLogoutTokenSingleUse(t, newStore(t)) })
	t.Run("ProviderSessionRevocation", func(t *testing.T) { testProviderSessionRevocation(t, newStore(t)) })
	t.Run("LatestSessionOfSubject", func(t *testing.T) { testLatestSessionOf(t, newStore(t)) })
}

// testLatestSessionOf: a subject's session last seen is the one a token
// exchange on its behalf reads.
func testLatestSessionOf(t *testing.T, st LoginStore) {
	ctx := ctxFor(t)
	if _, err := st.LatestLoginSessionOf(ctx, "sub-1"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("LatestLoginSessionOf(none) = %v, want ErrNotFound", err)
	}
	for i, hash := range []string{"la01", "la02", "la03"} {
		s := loginSession(hash)
		s.LastSeen = base.Add(time.Duration(i) * time.Minute)
		if hash == "la03" {
			s.Tokens.Subject = "sub-2"
			s.LastSeen = base.Add(time.Hour)
		}
		if err := st.CreateLoginSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := st.LatestLoginSessionOf(ctx, "sub-1"); err != nil || got != "la02" {
		t.Errorf("LatestLoginSessionOf = %q, %v; want la02", got, err)
	}
	if err := st.TouchLoginSession(ctx, "la01", base.Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, err := st.LatestLoginSessionOf(ctx, "sub-1"); err != nil || got != "la01" {
		t.Errorf("LatestLoginSessionOf after a use of la01 = %q, %v; want la01", got, err)
	}
}

// RunSharedLoginStore checks that a session created through one handle is
// seen, refreshed and deleted through another (issue 6: sessions created on
// instance A work on B, a logout on B is refused on A at once), and that
// failures recorded on one count on all.
func RunSharedLoginStore(t *testing.T, open SharedFactory[LoginStore]) {
	t.Run("AcrossInstances", func(t *testing.T) {
		st := open(t, 2)
		a, b := st[0], st[1]
		ctx := ctxFor(t)
		s := loginSession("aa01")
		if err := a.CreateLoginSession(ctx, s); err != nil {
			t.Fatalf("A.CreateLoginSession: %v", err)
		}
		if _, err := b.GetLoginSession(ctx, s.IDHash); err != nil {
			t.Fatalf("B.GetLoginSession of A's session: %v", err)
		}
		if err := b.DeleteLoginSession(ctx, s.IDHash); err != nil {
			t.Fatalf("B.DeleteLoginSession: %v", err)
		}
		if _, err := a.GetLoginSession(ctx, s.IDHash); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("A.GetLoginSession after B's logout: got %v, want ErrNotFound", err)
		}
		limit := []ports.LoginLimit{{Key: "user:x", Limit: 2}}
		for _, st := range []LoginStore{a, b} {
			if res, err := st.ReserveLoginAttempt(ctx, limit, base, base.Add(-time.Hour)); err != nil || !res.OK {
				t.Fatalf("ReserveLoginAttempt: %+v, %v", res, err)
			}
		}
		if res, err := a.ReserveLoginAttempt(ctx, limit, base, base.Add(-time.Hour)); err != nil || res.OK {
			t.Errorf("a third attempt across instances: got %+v, %v; want refused", res, err)
		}
	})
	t.Run("BackchannelLogoutAcrossInstances", func(t *testing.T) {
		st := open(t, 2)
		a, b := st[0], st[1]
		ctx := ctxFor(t)
		s := loginSession("bc01")
		if err := a.CreateLoginSession(ctx, s); err != nil {
			t.Fatalf("A.CreateLoginSession: %v", err)
		}
		if got, err := b.DeleteLoginSessionsOf(ctx, s.ProviderSID, ""); err != nil || !reflect.DeepEqual(got, []string{"bc01"}) {
			t.Errorf("B.DeleteLoginSessionsOf A's provider session: got %v, %v; want [bc01]", got, err)
		}
		if err := a.UseLogoutToken(ctx, "jti-x", base.Add(time.Minute), base); err != nil {
			t.Fatalf("A.UseLogoutToken: %v", err)
		}
		if err := b.UseLogoutToken(ctx, "jti-x", base.Add(time.Minute), base); !errors.Is(err, domain.ErrConflict) {
			t.Errorf("B.UseLogoutToken of a token A used: got %v, want ErrConflict", err)
		}
		if err := a.RevokeProviderSession(ctx, "sid-x", base.Add(time.Hour)); err != nil {
			t.Fatalf("A.RevokeProviderSession: %v", err)
		}
		if revoked, err := b.ProviderSessionRevoked(ctx, "sid-x", base); err != nil || !revoked {
			t.Errorf("B.ProviderSessionRevoked after A revoked it: got %v, %v; want true", revoked, err)
		}
	})
}

func testSessionsOfProviderSession(t *testing.T, st LoginStore) {
	ctx := ctxFor(t)
	mk := func(hash, sid, sub string) {
		s := loginSession(hash)
		s.ProviderSID, s.Tokens.Subject = sid, sub
		if err := st.CreateLoginSession(ctx, s); err != nil {
			t.Fatalf("CreateLoginSession: %v", err)
		}
	}
	mk("a", "sid-x", "alice")
	mk("b", "sid-x", "alice")
	mk("c", "sid-y", "alice")
	mk("d", "", "bob")
	mk("e", "", "alice")
	for _, tc := range []struct {
		sid, sub string
		want     []string
	}{
		{"sid-x", "alice", []string{"a", "b"}}, // the sid decides, not the subject
		{"sid-x", "alice", nil},                // already gone
		{"sid-none", "", nil},
		{"", "", nil}, // neither: nothing, never every session without a sid
		{"", "alice", []string{"c", "e"}},
	} {
		got, err := st.DeleteLoginSessionsOf(ctx, tc.sid, tc.sub)
		if err != nil {
			t.Fatalf("DeleteLoginSessionsOf(%q, %q): %v", tc.sid, tc.sub, err)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("DeleteLoginSessionsOf(%q, %q) = %v, want %v", tc.sid, tc.sub, got, tc.want)
		}
	}
	if _, err := st.GetLoginSession(ctx, "d"); err != nil {
		t.Errorf("bob's session was ended too: %v", err)
	}
	if _, err := st.GetLoginSession(ctx, "a"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("session of the ended sid: got %v, want ErrNotFound", err)
	}
}

func testLogoutTokenSingleUse(t *testing.T, st LoginStore) {
	ctx := ctxFor(t)
	until := base.Add(2 * time.Minute)
	// Concurrent uses of one token id: exactly one is accepted.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = st.UseLogoutToken(ctx, "jti-1", until, base) }()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, domain.ErrConflict):
			t.Fatalf("UseLogoutToken: %v", err)
		}
	}
	if ok != 1 {
		t.Errorf("concurrent uses of one logout token: %d accepted, want 1", ok)
	}
	if err := st.UseLogoutToken(ctx, "jti-2", until, base); err != nil {
		t.Errorf("another token id: %v", err)
	}
	if err := st.UseLogoutToken(ctx, "jti-1", until.Add(time.Minute), until.Add(-time.Second)); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("replay before the record expires: got %v, want ErrConflict", err)
	}
	// Once expired the record may be swept or taken over; the token itself
	// is no longer accepted by then (its iat is too old).
	if err := st.UseLogoutToken(ctx, "jti-1", until.Add(time.Hour), until); err != nil {
		t.Errorf("use after the record expired: %v", err)
	}
	if _, err := st.DeleteExpiredLoginSessions(ctx, until.Add(2*time.Hour), base); err != nil {
		t.Fatalf("DeleteExpiredLoginSessions: %v", err)
	}
	if err := st.UseLogoutToken(ctx, "jti-2", until, until.Add(-time.Second)); err != nil {
		t.Errorf("use after the sweep removed the record: %v", err)
	}
}

func testProviderSessionRevocation(t *testing.T, st LoginStore) {
	ctx := ctxFor(t)
	if revoked, err := st.ProviderSessionRevoked(ctx, "sid-1", base); err != nil || revoked {
		t.Fatalf("before any revocation: got %v, %v; want false", revoked, err)
	}
	until := base.Add(time.Hour)
	if err := st.RevokeProviderSession(ctx, "sid-1", until); err != nil {
		t.Fatalf("RevokeProviderSession: %v", err)
	}
	if err := st.RevokeProviderSession(ctx, "sid-1", base.Add(time.Minute)); err != nil { // the later end stays
		t.Fatalf("RevokeProviderSession again: %v", err)
	}
	for _, tc := range []struct {
		sid  string
		at   time.Time
		want bool
	}{
		{"sid-1", base, true},
		{"sid-1", until.Add(-time.Second), true},
		{"sid-1", until, false},
		{"sid-2", base, false},
	} {
		if got, err := st.ProviderSessionRevoked(ctx, tc.sid, tc.at); err != nil || got != tc.want {
			t.Errorf("ProviderSessionRevoked(%s, %v) = %v, %v; want %v", tc.sid, tc.at, got, err, tc.want)
		}
	}
	if _, err := st.DeleteExpiredLoginSessions(ctx, until, base); err != nil {
		t.Fatalf("DeleteExpiredLoginSessions: %v", err)
	}
	if got, err := st.ProviderSessionRevoked(ctx, "sid-1", base); err != nil || got {
		t.Errorf("after the sweep past its end: got %v, %v; want false (swept)", got, err)
	}
}

func loginSession(hash string) ports.LoginSession {
	return ports.LoginSession{
		IDHash: hash,
		Tokens: ports.TokenSet{
			Subject: "sub-1", Username: "alice",
			Roles: domain.RoleExtraction{Roles: []domain.Role{domain.RoleAdmin}, Source: domain.TokenID,
				Findings: []domain.RoleFinding{{Token: domain.TokenID, Claim: "realm_access.roles", Name: "admin", Role: domain.RoleAdmin}}},
			AccessToken: "at", RefreshToken: "rt", IDToken: "it",
			AccessExpiry: base.Add(5 * time.Minute), RefreshExpiry: base.Add(30 * time.Minute),
		},
		Version: 1, CreatedAt: base, LastSeen: base, ExpiresAt: base.Add(24 * time.Hour),
		ProviderSID: "sid-hash-" + hash,
	}
}

func testLoginRoundTrip(t *testing.T, st LoginStore) {
	ctx := ctxFor(t)
	want := loginSession("h1")
	if err := st.CreateLoginSession(ctx, want); err != nil {
		t.Fatalf("CreateLoginSession: %v", err)
	}
	got, err := st.GetLoginSession(ctx, "h1")
	if err != nil {
		t.Fatalf("GetLoginSession: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GetLoginSession:\n got %+v\nwant %+v", got, want)
	}
	noRefresh := loginSession("h2")
	noRefresh.Tokens.RefreshExpiry = time.Time{}
	if err := st.CreateLoginSession(ctx, noRefresh); err != nil {
		t.Fatalf("CreateLoginSession: %v", err)
	}
	if got, err := st.GetLoginSession(ctx, "h2"); err != nil || !got.Tokens.RefreshExpiry.IsZero() {
		t.Errorf("zero RefreshExpiry: got %v, %v; want zero", got.Tokens.RefreshExpiry, err)
	}
	if err := st.CreateLoginSession(ctx, want); err == nil {
		t.Errorf("CreateLoginSession of an existing id: got nil, want an error")
	}
	if _, err := st.GetLoginSession(ctx, "nope"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("GetLoginSession(unknown): got %v, want ErrNotFound", err)
	}
}

func testLoginVersioning(t *testing.T, st LoginStore) {
	ctx := ctxFor(t)
	s := loginSession("v1")
	if err := st.CreateLoginSession(ctx, s); err != nil {
		t.Fatalf("CreateLoginSession: %v", err)
	}
	// Two concurrent refreshes of version 1: exactly one wins.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := s
			next.Version = 2
			next.Tokens.AccessToken = []string{"at-a", "at-b"}[i]
			next.Tokens.Roles = domain.RoleExtraction{Roles: []domain.Role{domain.RoleUser}, Source: "default"}
			errs[i] = st.UpdateLoginSession(ctx, next)
		}()
	}
	wg.Wait()
	wins, conflicts := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case errors.Is(err, domain.ErrConflict):
			conflicts++
		default:
			t.Fatalf("UpdateLoginSession: %v", err)
		}
	}
	if wins != 1 || conflicts != 1 {
		t.Errorf("concurrent updates: got %d wins, %d conflicts; want 1 and 1", wins, conflicts)
	}
	got, err := st.GetLoginSession(ctx, "v1")
	if err != nil {
		t.Fatalf("GetLoginSession: %v", err)
	}
	if got.Version != 2 || got.Tokens.Roles.Roles[0] != domain.RoleUser {
		t.Errorf("after update: version %d roles %v; want 2 [USER]", got.Version, got.Tokens.Roles.Roles)
	}
	gone := s
	gone.IDHash, gone.Version = "missing", 2
	if err := st.UpdateLoginSession(ctx, gone); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("UpdateLoginSession(unknown): got %v, want ErrNotFound", err)
	}
}

func testLoginLifecycle(t *testing.T, st LoginStore) {
	ctx := ctxFor(t)
	fresh, idle, old := loginSession("fresh"), loginSession("idle"), loginSession("old")
	old.ExpiresAt = base.Add(time.Minute)
	for _, s := range []ports.LoginSession{fresh, idle, old} {
		if err := st.CreateLoginSession(ctx, s); err != nil {
			t.Fatalf("CreateLoginSession: %v", err)
		}
	}
	later := base.Add(2 * time.Hour)
	if err := st.TouchLoginSession(ctx, "fresh", later); err != nil {
		t.Fatalf("TouchLoginSession: %v", err)
	}
	if err := st.TouchLoginSession(ctx, "fresh", base); err != nil { // never backwards
		t.Fatalf("TouchLoginSession: %v", err)
	}
	if got, _ := st.GetLoginSession(ctx, "fresh"); !got.LastSeen.Equal(later) {
		t.Errorf("LastSeen: got %v, want %v", got.LastSeen, later)
	}
	if err := st.TouchLoginSession(ctx, "nope", later); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("TouchLoginSession(unknown): got %v, want ErrNotFound", err)
	}
	n, err := st.DeleteExpiredLoginSessions(ctx, later, later.Add(-time.Hour))
	if err != nil {
		t.Fatalf("DeleteExpiredLoginSessions: %v", err)
	}
	if n != 2 {
		t.Errorf("DeleteExpiredLoginSessions: got %d, want 2 (idle and old)", n)
	}
	if _, err := st.GetLoginSession(ctx, "fresh"); err != nil {
		t.Errorf("fresh session swept: %v", err)
	}
	if err := st.DeleteLoginSession(ctx, "fresh"); err != nil {
		t.Fatalf("DeleteLoginSession: %v", err)
	}
	if err := st.DeleteLoginSession(ctx, "fresh"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("second DeleteLoginSession: got %v, want ErrNotFound", err)
	}
}

func testAuthRequest(t *testing.T, st LoginStore) {
	ctx := ctxFor(t)
	want := ports.PendingAuthRequest{StateHash: "s1", Request: ports.AuthRequest{Nonce: "n", CodeVerifier: "v"}, ReturnTo: "/x?y=1", ExpiresAt: base.Add(10 * time.Minute)}
	if err := st.PutAuthRequest(ctx, want); err != nil {
		t.Fatalf("PutAuthRequest: %v", err)
	}
	expired := want
	expired.StateHash, expired.ExpiresAt = "s2", base.Add(-time.Second)
	if err := st.PutAuthRequest(ctx, expired); err != nil {
		t.Fatalf("PutAuthRequest: %v", err)
	}
	got, err := st.TakeAuthRequest(ctx, "s1", base)
	if err != nil {
		t.Fatalf("TakeAuthRequest: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("TakeAuthRequest: got %+v, want %+v", got, want)
	}
	tests := []struct{ name, hash string }{{"replayed", "s1"}, {"expired", "s2"}, {"unknown", "s3"}}
	for _, tt := range tests {
		if _, err := st.TakeAuthRequest(ctx, tt.hash, base); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("TakeAuthRequest(%s): got %v, want ErrNotFound", tt.name, err)
		}
	}
}

func testThrottle(t *testing.T, st LoginStore) {
	ctx := ctxFor(t)
	window := 15 * time.Minute
	alice := []ports.LoginLimit{{Key: "user:alice", Limit: 3}}
	reserve := func(limits []ports.LoginLimit, at time.Time) ports.LoginReservation {
		t.Helper()
		res, err := st.ReserveLoginAttempt(ctx, limits, at, at.Add(-window))
		if err != nil {
			t.Fatalf("ReserveLoginAttempt: %v", err)
		}
		return res
	}
	for i := range 3 {
		if res := reserve(alice, base.Add(time.Duration(i)*time.Minute)); !res.OK {
			t.Fatalf("attempt %d: refused, want recorded", i)
		}
	}
	if res := reserve(alice, base.Add(3*time.Minute)); res.OK || !res.Oldest.Equal(base) {
		t.Errorf("fourth attempt: got %+v, want refused with the oldest at %v", res, base)
	}
	if err := st.ReleaseLoginAttempt(ctx, []string{"user:alice"}, base.Add(2*time.Minute)); err != nil {
		t.Fatalf("ReleaseLoginAttempt: %v", err)
	}
	if res := reserve(alice, base.Add(3*time.Minute)); !res.OK {
		t.Error("after a release: refused, want recorded")
	}
	// A later window no longer counts the first attempt.
	if res := reserve(alice, base.Add(window+time.Minute)); !res.OK {
		t.Error("a window later: refused, want recorded")
	}
	// One limit reached: nothing is recorded under the other keys.
	if res := reserve([]ports.LoginLimit{{Key: "user:bob", Limit: 5}, {Key: "user:alice", Limit: 1}}, base.Add(window+time.Minute)); res.OK {
		t.Error("alice's limit reached: recorded, want refused")
	}
	if res := reserve([]ports.LoginLimit{{Key: "user:bob", Limit: 1}}, base.Add(window+time.Minute)); !res.OK {
		t.Error("bob after a refused attempt: refused, want recorded (nothing was kept for bob)")
	}
	if err := st.ClearLoginFailures(ctx, "user:alice"); err != nil {
		t.Fatalf("ClearLoginFailures: %v", err)
	}
	if res := reserve([]ports.LoginLimit{{Key: "user:alice", Limit: 1}}, base.Add(window+2*time.Minute)); !res.OK {
		t.Error("after clear: refused, want recorded")
	}
}

// testFailuresOfOtherKeysForgotten: attempts are recorded under a key the
// caller chooses (any username), so a key never seen again must not keep
// its rows forever: any reservation forgets every key's attempts that are
// older than its window.
func testFailuresOfOtherKeysForgotten(t *testing.T, st ports.LoginThrottle) {
	ctx := ctxFor(t)
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	window := 15 * time.Minute
	old := []string{"user:guess-1", "user:guess-2", "addr:203.0.113.9"}
	for _, k := range old {
		if _, err := st.ReserveLoginAttempt(ctx, []ports.LoginLimit{{Key: k, Limit: 9}}, base, base.Add(-window)); err != nil {
			t.Fatalf("ReserveLoginAttempt(%s): %v", k, err)
		}
	}
	later := base.Add(time.Hour)
	if _, err := st.ReserveLoginAttempt(ctx, []ports.LoginLimit{{Key: "user:someone-else", Limit: 9}}, later, later.Add(-window)); err != nil {
		t.Fatalf("ReserveLoginAttempt: %v", err)
	}
	for _, k := range old {
		// Counted since the epoch with a limit of one: a row kept past its
		// window refuses the attempt.
		if res, err := st.ReserveLoginAttempt(ctx, []ports.LoginLimit{{Key: k, Limit: 1}}, later, time.Unix(0, 1)); err != nil || !res.OK {
			t.Errorf("%s since ever: got %+v, %v; want its old attempt forgotten", k, res, err)
		}
	}
}

// WatchedLoginStore is a login store whose watcher reports session changes.
type WatchedLoginStore interface {
	LoginStore
	ports.LoginSessionWatcher
}

// RunLoginSessionWatcher checks that the watcher reports the changes made
// through the same store too, once committed: a logout waits for that
// report to know every instance has been told (app.Login.Logout).
func RunLoginSessionWatcher(t *testing.T, newStore Factory[WatchedLoginStore]) {
	st := newStore(t)
	ctx := ctxFor(t)
	heard := make(chan string, 8)
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
	s := loginSession("ee01")
	if err := st.CreateLoginSession(ctx, s); err != nil {
		t.Fatalf("CreateLoginSession: %v", err)
	}
	s.Version++
	if err := st.UpdateLoginSession(ctx, s); err != nil {
		t.Fatalf("UpdateLoginSession: %v", err)
	}
	if err := st.DeleteLoginSession(ctx, s.IDHash); err != nil {
		t.Fatalf("DeleteLoginSession: %v", err)
	}
	// A back-channel logout's revocation is reported too, apart.
	if err := st.RevokeProviderSession(ctx, "sidhash-ee01", base.Add(time.Hour)); err != nil {
		t.Fatalf("RevokeProviderSession: %v", err)
	}
	listeners, err := st.Listeners(ctx)
	if err != nil || len(listeners) != 1 {
		t.Fatalf("Listeners = %v, %v; want this store's one listener", listeners, err)
	}
	// Each report is followed, not necessarily at once, by the listener's
	// acknowledgement of it.
	var reports, acked []string
	for len(reports) < 3 || len(acked) < 3 {
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
			t.Fatalf("the watcher reported %q and acknowledged %q, want 3 of each", reports, acked)
		}
	}
	if want := []string{s.IDHash, s.IDHash, ports.RevokedSessionKey("sidhash-ee01")}; !slices.Equal(reports, want) {
		t.Errorf("the watcher reported %q (refresh, delete, revocation), want %q", reports, want)
	}
	for _, tc := range []struct {
		at   time.Time
		want []string
	}{{base, []string{"sidhash-ee01"}}, {base.Add(time.Hour), []string{}}} {
		got, err := st.RevokedProviderSessions(ctx, tc.at)
		if err != nil || !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
			t.Errorf("RevokedProviderSessions at %v: %v, %v; want %v", tc.at, got, err, tc.want)
		}
	}
}
