package porttest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// APIKeyStore is a managed-key store whose watcher reports key and owner
// changes.
type APIKeyStore interface {
	ports.APIKeyStore
	ports.LoginSessionWatcher
}

func apiKey(id, owner string, created time.Time) domain.APIKey {
	h := domain.HashManagedKey("text of " + id)
	return domain.APIKey{ID: id, Name: "ci " + id, Owner: owner, Hash: h[:],
		Permissions: []domain.Permission{domain.PermMeRead, domain.PermSessionsRead},
		Projects:    []string{"p1", "p,2"}, Tools: []string{"fs.read"},
		CreatedBy: owner, CreatedAt: created, ExpiresAt: created.Add(24 * time.Hour)}
}

// RunAPIKeyStore checks the managed-key store.
func RunAPIKeyStore(t *testing.T, newStore Factory[APIKeyStore]) {
	t.Run("Pages", func(t *testing.T) { testAPIKeyPages(t, newStore(t)) })
	t.Run("create get list", func(t *testing.T) {
		st, ctx := newStore(t), ctxFor(t)
		a := apiKey("aaaaaaaaaaaa", "alice", base)
		b := apiKey("bbbbbbbbbbbb", "alice", base.Add(time.Second))
		c := apiKey("cccccccccccc", "bob", base.Add(2*time.Second))
		c.Projects, c.Tools = nil, nil
		for _, k := range []domain.APIKey{a, b, c} {
			if err := st.CreateAPIKey(ctx, k, 10, base); err != nil {
				t.Fatalf("CreateAPIKey(%s): %v", k.ID, err)
			}
		}
		got, err := st.GetAPIKey(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !sameKey(got, a) {
			t.Errorf("GetAPIKey = %+v, want %+v", got, a)
		}
		if _, err := st.GetAPIKey(ctx, "zzzzzzzzzzzz"); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("GetAPIKey(unknown) = %v, want ErrNotFound", err)
		}
		if err := st.CreateAPIKey(ctx, a, 10, base); !errors.Is(err, domain.ErrConflict) {
			t.Errorf("CreateAPIKey(same id) = %v, want ErrConflict", err)
		}
		for _, tc := range []struct {
			owner string
			want  []string
		}{{"alice", []string{b.ID, a.ID}}, {"", []string{c.ID, b.ID, a.ID}}, {"nobody", nil}} {
			list, err := st.ListAPIKeys(ctx, tc.owner, ports.Page{})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, k := range list {
				ids = append(ids, k.ID)
			}
			if !slices.Equal(ids, tc.want) {
				t.Errorf("ListAPIKeys(%q) = %v, want %v", tc.owner, ids, tc.want)
			}
		}
	})
	t.Run("per-owner limit counts live keys only", func(t *testing.T) {
		st, ctx := newStore(t), ctxFor(t)
		if err := st.CreateAPIKey(ctx, apiKey("aaaaaaaaaaaa", "alice", base), 2, base); err != nil {
			t.Fatal(err)
		}
		expired := apiKey("bbbbbbbbbbbb", "alice", base.Add(-48*time.Hour))
		if err := st.CreateAPIKey(ctx, expired, 2, base.Add(-48*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateAPIKey(ctx, apiKey("cccccccccccc", "alice", base), 2, base); err != nil {
			t.Fatalf("third key with one expired: %v", err)
		}
		if err := st.CreateAPIKey(ctx, apiKey("dddddddddddd", "alice", base), 2, base); !errors.Is(err, domain.ErrConflict) {
			t.Fatalf("third live key = %v, want ErrConflict", err)
		}
		if err := st.CreateAPIKey(ctx, apiKey("eeeeeeeeeeee", "bob", base), 2, base); err != nil {
			t.Fatalf("another owner's key: %v", err)
		}
		if err := st.RevokeAPIKey(ctx, "aaaaaaaaaaaa", base); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateAPIKey(ctx, apiKey("dddddddddddd", "alice", base), 2, base); err != nil {
			t.Fatalf("after a revocation: %v", err)
		}
	})
	t.Run("revoke and touch", func(t *testing.T) {
		st, ctx := newStore(t), ctxFor(t)
		k := apiKey("aaaaaaaaaaaa", "alice", base)
		if err := st.CreateAPIKey(ctx, k, 10, base); err != nil {
			t.Fatal(err)
		}
		if err := st.TouchAPIKey(ctx, k.ID, base.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := st.RevokeAPIKey(ctx, k.ID, base.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := st.RevokeAPIKey(ctx, k.ID, base.Add(2*time.Hour)); err != nil {
			t.Fatalf("revoking again: %v", err)
		}
		got, err := st.GetAPIKey(ctx, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !got.LastUsed.Equal(base.Add(time.Minute)) || !got.RevokedAt.Equal(base.Add(time.Hour)) {
			t.Errorf("last used %v, revoked %v; want %v, %v", got.LastUsed, got.RevokedAt, base.Add(time.Minute), base.Add(time.Hour))
		}
		if err := st.RevokeAPIKey(ctx, "zzzzzzzzzzzz", base); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("RevokeAPIKey(unknown) = %v, want ErrNotFound", err)
		}
	})
	t.Run("changes need an audit intent", func(t *testing.T) {
		st := newStore(t)
		ctx := context.Background()
		if err := st.CreateAPIKey(ctx, apiKey("aaaaaaaaaaaa", "alice", base), 10, base); !errors.Is(err, ports.ErrNoAuditIntent) {
			t.Errorf("CreateAPIKey without intent = %v, want ErrNoAuditIntent", err)
		}
		if err := st.PutKeyOwner(ctx, domain.KeyOwner{Subject: "alice"}); !errors.Is(err, ports.ErrNoAuditIntent) {
			t.Errorf("PutKeyOwner without intent = %v, want ErrNoAuditIntent", err)
		}
	})
	t.Run("owners", func(t *testing.T) {
		st, ctx := newStore(t), ctxFor(t)
		if _, err := st.GetKeyOwner(ctx, "alice"); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("GetKeyOwner(unknown) = %v, want ErrNotFound", err)
		}
		alice := domain.KeyOwner{Subject: "alice", Name: "Alice", Roles: []domain.Role{domain.RoleLead, domain.RoleUser}, UpdatedAt: base}
		if err := st.PutKeyOwner(ctx, alice); err != nil {
			t.Fatal(err)
		}
		alice.Roles, alice.Disabled, alice.Name = []domain.Role{domain.RoleUser}, true, "Alice Liddell <b>ö</b>"
		if err := st.PutKeyOwner(ctx, alice); err != nil {
			t.Fatal(err)
		}
		got, err := st.GetKeyOwner(ctx, "alice")
		if err != nil || !slices.Equal(got.Roles, alice.Roles) || !got.Disabled || got.Service || !got.UpdatedAt.Equal(base) || got.Name != alice.Name {
			t.Errorf("GetKeyOwner = %+v, %v; want %+v", got, err, alice)
		}
		svc := domain.KeyOwner{Subject: domain.ServiceAccountSubject("ci"), Name: "ci", Roles: []domain.Role{"OPS"}, Service: true, UpdatedAt: base}
		if err := st.CreateKeyOwner(ctx, svc); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateKeyOwner(ctx, svc); !errors.Is(err, domain.ErrConflict) {
			t.Errorf("CreateKeyOwner twice = %v, want ErrConflict", err)
		}
		for _, tc := range []struct {
			service bool
			want    string
		}{{true, svc.Subject}, {false, "alice"}} {
			list, err := st.ListKeyOwners(ctx, tc.service, ports.Page{})
			if err != nil || len(list) != 1 || list[0].Subject != tc.want || list[0].Name == "" {
				t.Errorf("ListKeyOwners(%v) = %+v, %v; want %s", tc.service, list, err, tc.want)
			}
		}
	})
	t.Run("watcher reports revocations and owner changes, not uses", func(t *testing.T) {
		st, ctx := newStore(t), ctxFor(t)
		heard := make(chan string, 16)
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
		k := apiKey("aaaaaaaaaaaa", "alice", base)
		if err := st.CreateAPIKey(ctx, k, 10, base); err != nil {
			t.Fatal(err)
		}
		if err := st.TouchAPIKey(ctx, k.ID, base.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := st.RevokeAPIKey(ctx, k.ID, base.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := st.PutKeyOwner(ctx, domain.KeyOwner{Subject: "alice", Roles: []domain.Role{domain.RoleUser}}); err != nil {
			t.Fatal(err)
		}
		// A new name alone is a change every instance hears of.
		if err := st.PutKeyOwner(ctx, domain.KeyOwner{Subject: "alice", Name: "Alice", Roles: []domain.Role{domain.RoleUser}}); err != nil {
			t.Fatal(err)
		}
		listeners, err := st.Listeners(ctx)
		if err != nil || len(listeners) != 1 {
			t.Fatalf("Listeners = %v, %v; want this store's one listener", listeners, err)
		}
		// The listener acknowledges each report once its callback returned
		// (acknowledgements may come after later reports).
		l := listeners[0]
		var got []string
		for len(got) < 6 {
			select {
			case h := <-heard:
				got = append(got, h)
			case <-time.After(30 * time.Second):
				t.Fatalf("the watcher reported only %q", got)
			}
		}
		for _, r := range []string{ports.KeyChangeKey(k.ID), ports.OwnerChangeKey("alice")} {
			at, ack := slices.Index(got, r), slices.Index(got, ports.Ack(l, r))
			if at < 0 || ack < at {
				t.Errorf("the watcher reported %q, want %q and then its acknowledgement %q", got, r, ports.Ack(l, r))
			}
		}
		if at := slices.Index(got, ports.KeyChangeKey(k.ID)); at > slices.Index(got, ports.OwnerChangeKey("alice")) {
			t.Errorf("reports out of order: %q", got)
		}
		if n := countOf(got, ports.OwnerChangeKey("alice")); n != 2 {
			t.Errorf("the watcher reported %q: %d changes of alice's owner record, want 2 (roles, then name)", got, n)
		}
	})
}

// RunSharedAPIKeyStore checks that the per-owner limit holds when several
// instances create keys at once.
func RunSharedAPIKeyStore(t *testing.T, newStores SharedFactory[ports.APIKeyStore]) {
	stores := newStores(t, 4)
	ctx := ctxFor(t)
	const limit = 3
	var wg sync.WaitGroup
	errs := make([]error, 12)
	ids := []string{"aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc", "dddddddddddd", "eeeeeeeeeeee", "ffffffffffff",
		"gggggggggggg", "hhhhhhhhhhhh", "iiiiiiiiiiii", "jjjjjjjjjjjj", "kkkkkkkkkkkk", "llllllllllll"}
	for i := range errs {
		wg.Go(func() { errs[i] = stores[i%len(stores)].CreateAPIKey(ctx, apiKey(ids[i], "alice", base), limit, base) })
	}
	wg.Wait()
	created := 0
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case !errors.Is(err, domain.ErrConflict):
			t.Errorf("CreateAPIKey: %v", err)
		}
	}
	if created != limit {
		t.Errorf("%d keys created at once on 4 instances, want the limit %d", created, limit)
	}
}

func sameKey(a, b domain.APIKey) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Owner == b.Owner && slices.Equal(a.Hash, b.Hash) &&
		slices.Equal(a.Permissions, b.Permissions) && slices.Equal(a.Projects, b.Projects) && slices.Equal(a.Tools, b.Tools) &&
		a.CreatedBy == b.CreatedBy && a.CreatedAt.Equal(b.CreatedAt) && a.ExpiresAt.Equal(b.ExpiresAt) &&
		a.RevokedAt.Equal(b.RevokedAt) && a.LastUsed.Equal(b.LastUsed)
}

// countOf counts the reports r in got.
func countOf(got []string, r string) int {
	n := 0
	for _, g := range got {
		if g == r {
			n++
		}
	}
	return n
}
