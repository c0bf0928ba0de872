package porttest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// ConnectionStore is a connection store that registers servers too (a
// server with connections is not removed).
type ConnectionStore interface {
	ports.ConnectionStore
	ports.CatalogStore
}

func connection(id, subject, server string, created time.Time) domain.Connection {
	return domain.Connection{ID: id, Subject: subject, Server: server, Issuer: "https://as.example/", ClientID: "agentauth",
		UpstreamSubject: "up-" + subject, Scopes: []string{"repo", "read:user"}, Status: domain.ConnectionActive,
		AccessToken: "v1.sealed-access-" + id, RefreshToken: "v1.sealed-refresh-" + id,
		ExpiresAt: created.Add(time.Hour), CreatedAt: created, Version: 1}
}

func sameConnection(a, b domain.Connection) bool {
	return a.ID == b.ID && a.Subject == b.Subject && a.Server == b.Server && a.Issuer == b.Issuer && a.ClientID == b.ClientID &&
		a.UpstreamSubject == b.UpstreamSubject && slices.Equal(a.Scopes, b.Scopes) && a.Status == b.Status && a.Broken == b.Broken &&
		a.AccessToken == b.AccessToken && a.RefreshToken == b.RefreshToken && a.ExpiresAt.Equal(b.ExpiresAt) &&
		a.CreatedAt.Equal(b.CreatedAt) && a.RefreshedAt.Equal(b.RefreshedAt) && a.Version == b.Version
}

// RunConnectionStore checks the connection store.
func RunConnectionStore(t *testing.T, newStore Factory[ConnectionStore]) {
	t.Run("put get list replace", func(t *testing.T) {
		st, ctx := newStore(t), ctxFor(t)
		a := connection("conn_a", "alice", "gh", base)
		b := connection("conn_b", "alice", "drive", base.Add(time.Second))
		c := connection("conn_c", "bob", "gh", base.Add(2*time.Second))
		c.Scopes, c.UpstreamSubject = nil, ""
		for _, x := range []domain.Connection{a, b, c} {
			if err := st.PutConnection(ctx, x); err != nil {
				t.Fatalf("PutConnection(%s): %v", x.ID, err)
			}
		}
		if got, err := st.GetConnection(ctx, "alice", "gh"); err != nil || !sameConnection(got, a) {
			t.Errorf("GetConnection = %+v, %v; want %+v", got, err, a)
		}
		if got, err := st.GetConnection(ctx, "bob", "gh"); err != nil || !sameConnection(got, c) {
			t.Errorf("GetConnection(no scopes) = %+v, %v; want %+v", got, err, c)
		}
		if _, err := st.GetConnection(ctx, "bob", "drive"); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("GetConnection(none) = %v, want ErrNotFound", err)
		}
		list := func(subject string, page ports.Page) []string {
			t.Helper()
			got, err := st.ListConnections(ctx, subject, page)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, x := range got {
				ids = append(ids, x.ID)
			}
			return ids
		}
		for _, tc := range []struct {
			subject string
			page    ports.Page
			want    []string
		}{
			{"alice", ports.Page{}, []string{"conn_b", "conn_a"}},
			{"", ports.Page{}, []string{"conn_c", "conn_b", "conn_a"}},
			{"", ports.Page{Limit: 2}, []string{"conn_c", "conn_b"}},
			{"", ports.Page{Limit: 2, After: ports.CursorOf(b.CreatedAt, b.ID)}, []string{"conn_a"}},
			{"nobody", ports.Page{}, nil},
		} {
			if got := list(tc.subject, tc.page); !slices.Equal(got, tc.want) {
				t.Errorf("ListConnections(%q, %+v) = %v, want %v", tc.subject, tc.page, got, tc.want)
			}
		}
		// Connecting again replaces the connection, with a new id and time.
		again := connection("conn_d", "alice", "gh", base.Add(3*time.Second))
		again.AccessToken = "v1.sealed-access-again"
		if err := st.PutConnection(ctx, again); err != nil {
			t.Fatalf("PutConnection(again): %v", err)
		}
		if got, err := st.GetConnection(ctx, "alice", "gh"); err != nil || !sameConnection(got, again) {
			t.Errorf("GetConnection after connecting again = %+v, %v; want %+v", got, err, again)
		}
		if got := list("alice", ports.Page{}); !slices.Equal(got, []string{"conn_d", "conn_b"}) {
			t.Errorf("ListConnections(alice) after connecting again = %v", got)
		}
	})
	t.Run("update compares the version", func(t *testing.T) {
		st, ctx := newStore(t), ctxFor(t)
		c := connection("conn_a", "alice", "gh", base)
		if err := st.PutConnection(ctx, c); err != nil {
			t.Fatal(err)
		}
		next := c
		next.Version, next.AccessToken, next.RefreshToken, next.RefreshedAt, next.ExpiresAt = 2, "v1.new-access", "v1.new-refresh", base.Add(time.Minute), base.Add(2*time.Hour)
		if err := st.UpdateConnection(ctx, next); err != nil {
			t.Fatalf("UpdateConnection: %v", err)
		}
		if got, _ := st.GetConnection(ctx, "alice", "gh"); !sameConnection(got, next) {
			t.Errorf("after UpdateConnection: %+v, want %+v", got, next)
		}
		stale := c
		stale.Version, stale.Status, stale.Broken = 2, domain.ConnectionBroken, "invalid_grant"
		if err := st.UpdateConnection(ctx, stale); !errors.Is(err, domain.ErrConflict) {
			t.Errorf("UpdateConnection(stale version) = %v, want ErrConflict", err)
		}
		broken := next
		broken.Version, broken.Status, broken.Broken = 3, domain.ConnectionBroken, "invalid_grant"
		if err := st.UpdateConnection(ctx, broken); err != nil {
			t.Fatalf("UpdateConnection(broken): %v", err)
		}
		if got, _ := st.GetConnection(ctx, "alice", "gh"); got.Status != domain.ConnectionBroken || got.Broken != "invalid_grant" {
			t.Errorf("after marking broken: %+v", got)
		}
		gone := connection("conn_x", "bob", "gh", base)
		gone.Version = 2
		if err := st.UpdateConnection(ctx, gone); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("UpdateConnection(none) = %v, want ErrNotFound", err)
		}
	})
	t.Run("delete returns it", func(t *testing.T) {
		st, ctx := newStore(t), ctxFor(t)
		c := connection("conn_a", "alice", "gh", base)
		if err := st.PutConnection(ctx, c); err != nil {
			t.Fatal(err)
		}
		got, err := st.DeleteConnection(ctx, "alice", "gh")
		if err != nil || !sameConnection(got, c) {
			t.Errorf("DeleteConnection = %+v, %v; want %+v", got, err, c)
		}
		if _, err := st.GetConnection(ctx, "alice", "gh"); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("GetConnection after delete = %v, want ErrNotFound", err)
		}
		if _, err := st.DeleteConnection(ctx, "alice", "gh"); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("DeleteConnection twice = %v, want ErrNotFound", err)
		}
	})
	t.Run("one refresh lease at a time", func(t *testing.T) {
		st, ctx := newStore(t), ctxFor(t)
		c := connection("conn_a", "alice", "gh", base)
		if err := st.PutConnection(ctx, c); err != nil {
			t.Fatal(err)
		}
		version := int64(1)
		lease := func(now time.Time) bool {
			t.Helper()
			ok, err := st.LeaseRefresh(ctx, "alice", "gh", version, now, now.Add(30*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !lease(base) {
			t.Fatal("first lease refused")
		}
		if lease(base.Add(time.Second)) {
			t.Error("a second lease while the first holds was granted")
		}
		if !lease(base.Add(31 * time.Second)) {
			t.Error("a lease after the first ran out was refused")
		}
		next := c
		next.Version = 2
		if err := st.UpdateConnection(ctx, next); err != nil {
			t.Fatal(err)
		}
		// A request that read the connection before that refresh would
		// refresh again with the refresh token it replaced: refused.
		if lease(base.Add(32 * time.Second)) {
			t.Error("a lease on the version before the refresh was granted")
		}
		version = 2
		if !lease(base.Add(32 * time.Second)) {
			t.Error("a lease after the refresh was written was refused")
		}
		if ok, err := st.LeaseRefresh(ctx, "bob", "gh", 1, base, base.Add(time.Minute)); ok || err != nil {
			t.Errorf("LeaseRefresh(no connection) = %v, %v; want false", ok, err)
		}
	})
	t.Run("connect requests are used once", func(t *testing.T) {
		st, ctx := newStore(t), ctxFor(t)
		r := ports.ConnectRequest{StateHash: "s1", Subject: "alice", Server: "gh", Issuer: "https://as.example/", ClientID: "agentauth",
			CodeVerifier: "v1.sealed-verifier", Resource: "https://gh.example/mcp", ReturnTo: "/console/connections", ExpiresAt: base.Add(10 * time.Minute)}
		if err := st.PutConnectRequest(ctx, r, base); err != nil {
			t.Fatal(err)
		}
		old := r
		old.StateHash, old.ExpiresAt = "s0", base.Add(time.Minute)
		if err := st.PutConnectRequest(ctx, old, base); err != nil {
			t.Fatal(err)
		}
		if err := st.PutConnectRequest(ctx, r, base); !errors.Is(err, domain.ErrConflict) {
			t.Errorf("PutConnectRequest(same state) = %v, want ErrConflict", err)
		}
		got, err := st.TakeConnectRequest(ctx, "s1", base.Add(time.Minute))
		if err != nil || got != r {
			t.Errorf("TakeConnectRequest = %+v, %v; want %+v", got, err, r)
		}
		if _, err := st.TakeConnectRequest(ctx, "s1", base.Add(time.Minute)); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("TakeConnectRequest twice = %v, want ErrNotFound", err)
		}
		// A later request's store drops the expired one.
		later := r
		later.StateHash, later.ExpiresAt = "s2", base.Add(20*time.Minute)
		if err := st.PutConnectRequest(ctx, later, base.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if _, err := st.TakeConnectRequest(ctx, "s0", base); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("an expired request was kept past a later one: %v", err)
		}
		if _, err := st.TakeConnectRequest(ctx, "s2", base.Add(21*time.Minute)); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("TakeConnectRequest(expired) = %v, want ErrNotFound", err)
		}
	})
	t.Run("a server with connections stays", func(t *testing.T) {
		st, ctx := newStore(t), ctxFor(t)
		if err := st.CreateServer(ctx, domain.Server{Name: "gh", URL: "https://gh.example/mcp", CreatedAt: base}); err != nil {
			t.Fatal(err)
		}
		if err := st.PutConnection(ctx, connection("conn_a", "alice", "gh", base)); err != nil {
			t.Fatal(err)
		}
		if err := st.DeleteServer(ctx, "gh"); !errors.Is(err, domain.ErrConflict) {
			t.Errorf("DeleteServer with a connection = %v, want ErrConflict", err)
		}
		if _, err := st.DeleteConnection(ctx, "alice", "gh"); err != nil {
			t.Fatal(err)
		}
		if err := st.DeleteServer(ctx, "gh"); err != nil {
			t.Errorf("DeleteServer once its connections are gone = %v", err)
		}
	})
}

// RunSharedConnectionStore checks that of many instances asking for a
// connection's refresh at once, one gets it.
func RunSharedConnectionStore(t *testing.T, newStores SharedFactory[ports.ConnectionStore]) {
	stores := newStores(t, 4)
	ctx := ctxFor(t)
	if err := stores[0].PutConnection(ctx, connection("conn_a", "alice", "gh", base)); err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		now := base.Add(time.Duration(round) * time.Minute)
		var wg sync.WaitGroup
		taken := make([]bool, 12)
		errs := make([]error, len(taken))
		for i := range taken {
			wg.Go(func() {
				taken[i], errs[i] = stores[i%len(stores)].LeaseRefresh(ctx, "alice", "gh", 1, now, now.Add(30*time.Second))
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if n := count(taken); n != 1 {
			t.Errorf("round %d: %d of %d leases granted at once on 4 instances, want 1", round, n, len(taken))
		}
	}
	if got, err := stores[3].GetConnection(ctx, "alice", "gh"); err != nil || got.ID != "conn_a" {
		t.Errorf("another instance reads %+v, %v", got, err)
	}
}

func count(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
