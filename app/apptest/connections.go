package apptest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/porttest"
)

// authServer is an authorization server as the port sees it: codes it
// issued, refresh tokens that rotate (a used one is refused, invalid_grant,
// as Ory Hydra does), revocation, and counts of what it was asked. Refresh
// takes refreshDelay, so that calls on several instances overlap.
type authServer struct {
	mu           sync.Mutex
	codes        map[string]codeGrant // code → grant
	refresh      map[string]string    // live refresh token → subject
	access       map[string]bool      // live access tokens
	revoked      []string             // tokens revoked
	verifiers    map[string]string    // state → verifier given with it
	ttl          time.Duration        // access-token lifetime
	clock        func() time.Time     // the use case's clock
	refreshDelay time.Duration        // how long a refresh takes
	refreshes    atomic.Int64         // refresh requests
	exchanges    atomic.Int64         // token exchanges
	refusing     atomic.Bool          // refuse every refresh (the grant was revoked upstream)
	lastAS       atomic.Pointer[ports.UpstreamAS]
	issued       map[string][]string // subject → access tokens issued, in order
}

type codeGrant struct{ subject, verifier, redirect string }

func newAuthServer(clock func() time.Time) *authServer {
	return &authServer{codes: map[string]codeGrant{}, refresh: map[string]string{}, access: map[string]bool{}, verifiers: map[string]string{},
		issued: map[string][]string{}, ttl: 10 * time.Minute, clock: clock}
}

var _ ports.UpstreamAuthorizer = (*authServer)(nil)

func token(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func (a *authServer) Discover(_ context.Context, sv domain.Server) (ports.UpstreamAS, error) {
	u := sv.UpstreamAuth
	if u == nil {
		return ports.UpstreamAS{}, domain.ErrInvalidInput
	}
	as := ports.UpstreamAS{Issuer: u.Issuer, AuthURL: u.Issuer + "authorize", TokenURL: u.Issuer + "token", RevocationURL: u.Issuer + "revoke",
		ClientID: u.ClientID, Scopes: u.Scopes, Resource: u.Resource, Audience: u.Audience}
	a.lastAS.Store(&as)
	return as, nil
}

func (a *authServer) AuthCodeURL(as ports.UpstreamAS, state, verifier, redirectURI string) string {
	a.mu.Lock()
	a.verifiers[state] = verifier
	a.mu.Unlock()
	return as.AuthURL + "?" + url.Values{"state": {state}, "redirect_uri": {redirectURI}, "client_id": {as.ClientID}, "resource": {as.Resource}}.Encode()
}

// authorize is the person signing in at the authorization server as
// subject for the request of state: the code the callback brings.
func (a *authServer) authorize(state, subject, redirect string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	code := token("code-")
	a.codes[code] = codeGrant{subject: subject, verifier: a.verifiers[state], redirect: redirect}
	return code
}

func (a *authServer) issue(subject string) ports.UpstreamTokens {
	at, rt := token("at-"+subject+"-"), token("rt-"+subject+"-")
	a.access[at], a.refresh[rt] = true, subject
	a.issued[subject] = append(a.issued[subject], at)
	return ports.UpstreamTokens{AccessToken: at, RefreshToken: rt, Expiry: a.clock().Add(a.ttl), Scopes: []string{"repo"}, Subject: "up-" + subject}
}

func (a *authServer) ExchangeCode(_ context.Context, _ ports.UpstreamAS, code, verifier, redirectURI string) (ports.UpstreamTokens, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	g, ok := a.codes[code]
	delete(a.codes, code)
	if !ok || g.verifier != verifier || g.redirect != redirectURI {
		return ports.UpstreamTokens{}, &ports.UpstreamRefusal{Code: "invalid_grant", Status: 400}
	}
	return a.issue(g.subject), nil
}

func (a *authServer) Refresh(_ context.Context, _ ports.UpstreamAS, refreshToken string) (ports.UpstreamTokens, error) {
	a.refreshes.Add(1)
	time.Sleep(a.refreshDelay) // the authorization server's own time: calls overlap
	a.mu.Lock()
	defer a.mu.Unlock()
	subject, ok := a.refresh[refreshToken]
	delete(a.refresh, refreshToken)
	if !ok || a.refusing.Load() {
		return ports.UpstreamTokens{}, &ports.UpstreamRefusal{Code: "invalid_grant", Status: 400}
	}
	return a.issue(subject), nil
}

func (a *authServer) Revoke(_ context.Context, _ ports.UpstreamAS, tok, _ string) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.refresh, tok)
	delete(a.access, tok)
	a.revoked = append(a.revoked, tok)
	return true, nil
}

// Exchange issues "<audience>-for-<subject token>", refusing the subject
// token "expired-token".
func (a *authServer) Exchange(_ context.Context, as ports.UpstreamAS, subjectToken string) (ports.UpstreamTokens, error) {
	a.exchanges.Add(1)
	if subjectToken == "expired-token" {
		return ports.UpstreamTokens{}, &ports.UpstreamRefusal{Code: "invalid_token", Status: 400}
	}
	return ports.UpstreamTokens{AccessToken: as.Audience + "-for-" + subjectToken, Expiry: a.clock().Add(5 * time.Minute)}, nil
}

func (a *authServer) wasRevoked(tok string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Contains(a.revoked, tok)
}

// clockAt is a clock a test moves.
type clockAt struct{ at atomic.Int64 }

func (c *clockAt) Now() time.Time      { return time.Unix(0, c.at.Load()).UTC() }
func (c *clockAt) add(d time.Duration) { c.at.Add(int64(d)) }

const connBase = "https://agentauth.example.com"

var gh = domain.Server{Name: "gh", URL: "https://gh.example/mcp", Endpoint: "https://gh.internal/mcp",
	UpstreamAuth: &domain.UpstreamAuth{Type: domain.UpstreamOAuth2, Issuer: "https://as.example/", ClientID: "agentauth", Scopes: []string{"repo"},
		Resource: "https://gh.example/mcp"}}

func connectionsOn(t *testing.T, st porttest.ConnectionStore, as ports.UpstreamAuthorizer, clock ports.Clock, keys ...[]byte) *app.Connections {
	t.Helper()
	authz, err := domain.NewAuthorizer(nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := app.NewConnections(app.ConnectionsConfig{Keys: keys, Base: connBase, RefreshBefore: time.Minute, Lease: 5 * time.Second,
		Poll: 5 * time.Millisecond, ExchangeBefore: 30 * time.Second}, st, st, as, authz, clock)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var (
	keyA = []byte(strings.Repeat("a", 32))
	keyB = []byte(strings.Repeat("b", 32))
)

func person(subject string, role domain.Role) domain.Principal {
	return domain.Principal{Subject: subject, Roles: []domain.Role{role}, Method: domain.MethodOIDC}
}

// connect runs p's connect flow on c to its end.
func connect(t *testing.T, ctx context.Context, c *app.Connections, as *authServer, p domain.Principal) app.Connected {
	t.Helper()
	to, err := c.Begin(ctx, p, "gh", "")
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	u, _ := url.Parse(to)
	q := u.Query()
	if q.Get("redirect_uri") != connBase+"/connect/gh/callback" || q.Get("resource") != "https://gh.example/mcp" || q.Get("state") == "" {
		t.Fatalf("the authorization request: %s", to)
	}
	res, err := c.Callback(ctx, p, "gh", q.Get("state"), as.authorize(q.Get("state"), p.Subject, q.Get("redirect_uri")), "")
	if err != nil {
		t.Fatalf("Callback: %v", err)
	}
	return res
}

// RunConnections checks people's connections over a store: the connect
// flow (its state used once, by the person who began it), the token a
// call gets (sealed at rest), refresh before expiry, a refused refresh
// breaking it, removal revoking it, and the sealing key's rotation.
func RunConnections(t *testing.T, newStore porttest.Factory[porttest.ConnectionStore]) {
	t.Run("connect use refresh break remove", func(t *testing.T) {
		st, ctx := newStore(t), porttest.Context(t)
		if err := st.CreateServer(ctx, gh); err != nil {
			t.Fatal(err)
		}
		clock := &clockAt{}
		clock.at.Store(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC).UnixNano())
		as := newAuthServer(clock.Now)
		c := connectionsOn(t, st, as, clock, keyA)
		alice, bob := person("alice", domain.RoleUser), person("bob", domain.RoleUser)

		// Not connected: refused with where to connect.
		_, _, err := c.Credential(ctx, gh, app.UpstreamPerson{Subject: "alice"})
		var nc *app.NotConnectedError
		if !errors.As(err, &nc) || nc.URL != connBase+"/connect/gh" {
			t.Fatalf("Credential before connecting = %v, want NotConnectedError with the connect URL", err)
		}

		// Another person's callback of alice's request is refused; the
		// state is then used up.
		to, err := c.Begin(ctx, alice, "gh", "/console/connections")
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(to)
		state := u.Query().Get("state")
		code := as.authorize(state, "bob", u.Query().Get("redirect_uri"))
		var refusal *domain.Refusal
		if _, err := c.Callback(ctx, bob, "gh", state, code, ""); !errors.As(err, &refusal) || refusal.Code != domain.ReasonNotConnectOwner {
			t.Errorf("bob's callback of alice's request = %v, want refused %s", err, domain.ReasonNotConnectOwner)
		}
		if _, err := c.Callback(ctx, alice, "gh", state, code, ""); !errors.Is(err, domain.ErrInvalidInput) {
			t.Errorf("the state again = %v, want ErrInvalidInput", err)
		}
		if _, err := c.Begin(ctx, alice, "gh", "https://evil.example/"); !errors.Is(err, domain.ErrInvalidInput) {
			t.Errorf("a return_to off the site = %v, want ErrInvalidInput", err)
		}

		res := connect(t, ctx, c, as, alice)
		if res.ReturnTo != "/console/connections" || res.Connection.UpstreamSubject != "up-alice" || res.Replaced {
			t.Errorf("connected: %+v", res)
		}
		first := as.issued["alice"][0]
		tok, note, err := c.Credential(ctx, gh, app.UpstreamPerson{Subject: "alice"})
		if err != nil || tok != first || note != "connection of alice" {
			t.Fatalf("Credential = %q, %q, %v; want alice's access token", tok, note, err)
		}
		stored, err := st.GetConnection(ctx, "alice", "gh")
		if err != nil || strings.Contains(stored.AccessToken, "at-") || strings.Contains(stored.RefreshToken, "rt-") || !strings.HasPrefix(stored.AccessToken, "v1.") {
			t.Errorf("stored tokens are not sealed: %q %q (%v)", stored.AccessToken, stored.RefreshToken, err)
		}
		if _, _, err := c.Credential(ctx, gh, app.UpstreamPerson{Subject: "bob"}); !errors.As(err, &nc) {
			t.Errorf("bob, not connected = %v, want NotConnectedError", err)
		}

		// Within refreshBefore of its expiry, the token is refreshed first.
		clock.add(9*time.Minute + 30*time.Second)
		tok, note, err = c.Credential(ctx, gh, app.UpstreamPerson{Subject: "alice"})
		if err != nil || tok != as.issued["alice"][1] || !strings.Contains(note, "refreshed") || as.refreshes.Load() != 1 {
			t.Fatalf("Credential near expiry = %q, %q, %v (%d refreshes); want a refreshed token", tok, note, err, as.refreshes.Load())
		}
		if got, _ := st.GetConnection(ctx, "alice", "gh"); got.RefreshedAt.IsZero() || got.Version != 2 {
			t.Errorf("after the refresh: %+v", got)
		}

		// The grant revoked upstream: the refresh is refused, the
		// connection breaks and says so.
		as.refusing.Store(true)
		clock.add(10 * time.Minute)
		if _, note, err := c.Credential(ctx, gh, app.UpstreamPerson{Subject: "alice"}); !errors.As(err, &nc) || !strings.Contains(note, "broken") {
			t.Fatalf("Credential with the refresh refused = %q, %v; want NotConnectedError, broken", note, err)
		}
		page, err := c.List(ctx, alice, app.PageRequest{})
		if err != nil || len(page.Items) != 1 || page.Items[0].Status != domain.ConnectionBroken || page.Items[0].Broken != "invalid_grant" ||
			page.Items[0].AccessToken != "" || page.Items[0].RefreshToken != "" {
			t.Errorf("List after the break = %+v, %v", page.Items, err)
		}
		as.refusing.Store(false)

		// Connecting again mends it, and revokes nothing it needs.
		res = connect(t, ctx, c, as, alice)
		if !res.Replaced {
			t.Errorf("connecting again: %+v, want Replaced", res)
		}
		latest := as.issued["alice"][len(as.issued["alice"])-1]
		if tok, _, err := c.Credential(ctx, gh, app.UpstreamPerson{Subject: "alice"}); err != nil || tok != latest {
			t.Errorf("Credential after connecting again = %q, %v; want %q", tok, err, latest)
		}

		// Listing: one's own; everyone's for connections:audit.
		connect(t, ctx, c, as, bob)
		for _, tc := range []struct {
			p    domain.Principal
			want int
		}{{alice, 1}, {bob, 1}, {person("aud", domain.RoleAuditor), 2}, {person("adm", domain.RoleAdmin), 2}} {
			if page, err := c.List(ctx, tc.p, app.PageRequest{}); err != nil || len(page.Items) != tc.want {
				t.Errorf("List as %s = %d connections, %v; want %d", tc.p.Subject, len(page.Items), err, tc.want)
			}
		}

		// Removing another's needs connections:manage.
		if _, err := c.Remove(ctx, alice, "bob", "gh"); !errors.As(err, &refusal) {
			t.Errorf("alice removing bob's = %v, want refused", err)
		}
		removed, err := c.Remove(ctx, person("adm", domain.RoleAdmin), "bob", "gh")
		if err != nil || !removed.Revoked || removed.Connection.Subject != "bob" || removed.Connection.AccessToken != "" {
			t.Errorf("ADMIN removing bob's = %+v, %v", removed, err)
		}
		if !as.wasRevoked(as.issued["bob"][0]) {
			t.Error("bob's access token was not revoked")
		}
		if _, err := c.Remove(ctx, alice, "", "gh"); err != nil {
			t.Fatal(err)
		}
		if !as.wasRevoked(latest) {
			t.Error("alice's access token was not revoked at removal")
		}
		for _, who := range []string{"alice", "bob"} {
			if _, _, err := c.Credential(ctx, gh, app.UpstreamPerson{Subject: who}); !errors.As(err, &nc) {
				t.Errorf("%s after removal = %v, want NotConnectedError", who, err)
			}
		}
		if _, err := c.Remove(ctx, alice, "", "gh"); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("removing twice = %v, want ErrNotFound", err)
		}
	})
	t.Run("the sealing key rotates", func(t *testing.T) {
		st, ctx := newStore(t), porttest.Context(t)
		if err := st.CreateServer(ctx, gh); err != nil {
			t.Fatal(err)
		}
		clock := &clockAt{}
		clock.at.Store(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC).UnixNano())
		as := newAuthServer(clock.Now)
		connect(t, ctx, connectionsOn(t, st, as, clock, keyA), as, person("alice", domain.RoleUser))
		want := as.issued["alice"][0]
		get := func(c *app.Connections) (string, error) {
			tok, _, err := c.Credential(ctx, gh, app.UpstreamPerson{Subject: "alice"})
			return tok, err
		}
		if _, err := get(connectionsOn(t, st, as, clock, keyB)); err == nil {
			t.Error("a key that did not seal the tokens opened them")
		}
		if tok, err := get(connectionsOn(t, st, as, clock, keyB, keyA)); err != nil || tok != want {
			t.Fatalf("with the key rotated, the previous one kept: %q, %v", tok, err)
		}
		if tok, err := get(connectionsOn(t, st, as, clock, keyB)); err != nil || tok != want {
			t.Errorf("once used, the tokens are sealed under the new key: %q, %v", tok, err)
		}
	})
	t.Run("token exchange", func(t *testing.T) {
		st, ctx := newStore(t), porttest.Context(t)
		billing := domain.Server{Name: "billing", URL: "https://billing.example/mcp", Endpoint: "https://billing.internal/mcp",
			UpstreamAuth: &domain.UpstreamAuth{Type: domain.UpstreamTokenExchange, Issuer: "https://idp.example/", ClientID: "agentauth", Audience: "billing-api"}}
		if err := st.CreateServer(ctx, billing); err != nil {
			t.Fatal(err)
		}
		clock := &clockAt{}
		clock.at.Store(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC).UnixNano())
		as := newAuthServer(clock.Now)
		c := connectionsOn(t, st, as, clock) // no key: exchange keeps nothing at rest
		get := func(who app.UpstreamPerson) (string, string, error) { return c.Credential(ctx, billing, who) }
		tok, note, err := get(app.UpstreamPerson{Subject: "alice", ProviderToken: "pt-alice"})
		if err != nil || tok != "billing-api-for-pt-alice" || note != "token exchange for alice" {
			t.Fatalf("exchange = %q, %q, %v", tok, note, err)
		}
		if tok, note, err := get(app.UpstreamPerson{Subject: "alice", ProviderToken: "pt-alice"}); err != nil || tok != "billing-api-for-pt-alice" ||
			!strings.Contains(note, "kept") || as.exchanges.Load() != 1 {
			t.Errorf("again = %q, %q, %v (%d exchanges); want the token kept", tok, note, err, as.exchanges.Load())
		}
		if tok, _, _ := get(app.UpstreamPerson{Subject: "bob", ProviderToken: "pt-bob"}); tok != "billing-api-for-pt-bob" || as.exchanges.Load() != 2 {
			t.Errorf("bob = %q (%d exchanges); want his own", tok, as.exchanges.Load())
		}
		clock.add(4*time.Minute + 31*time.Second) // within ExchangeBefore of its expiry
		if _, _, err := get(app.UpstreamPerson{Subject: "alice", ProviderToken: "pt-alice"}); err != nil || as.exchanges.Load() != 3 {
			t.Errorf("near its expiry: %v (%d exchanges); want exchanged again", err, as.exchanges.Load())
		}
		var nc *app.NotConnectedError
		if _, _, err := get(app.UpstreamPerson{Subject: "alice"}); !errors.As(err, &nc) || nc.URL != connBase+"/auth/login" {
			t.Errorf("without a provider token = %v; want NotConnectedError naming the sign-in URL", err)
		}
		if _, note, err := get(app.UpstreamPerson{Subject: "alice", ProviderToken: "expired-token"}); err == nil || errors.As(err, &nc) ||
			!strings.Contains(note, "refused (invalid_token)") {
			t.Errorf("a refused exchange = %q, %v; want an error noting the refusal", note, err)
		}
	})
	t.Run("off without a key", func(t *testing.T) {
		st, ctx := newStore(t), porttest.Context(t)
		if err := st.CreateServer(ctx, gh); err != nil {
			t.Fatal(err)
		}
		c := connectionsOn(t, st, newAuthServer(time.Now), app.SystemClock{})
		if _, err := c.Begin(ctx, person("alice", domain.RoleUser), "gh", ""); !errors.Is(err, domain.ErrUnavailable) ||
			!strings.Contains(err.Error(), "gateway.connections.keyFile") {
			t.Errorf("Begin without a key = %v, want ErrUnavailable naming gateway.connections.keyFile", err)
		}
	})
}

// RunSharedConnections checks that instances on one store share people's
// connections, and that of many calls on several instances when a token
// nears its expiry, one refreshes it and the others use what it got.
func RunSharedConnections(t *testing.T, open porttest.SharedFactory[porttest.ConnectionStore]) {
	stores := open(t, 2)
	ctx := porttest.Context(t)
	if err := stores[0].CreateServer(ctx, gh); err != nil {
		t.Fatal(err)
	}
	clock := &clockAt{}
	clock.at.Store(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC).UnixNano())
	as := newAuthServer(clock.Now)
	as.refreshDelay = 50 * time.Millisecond
	a, b := connectionsOn(t, stores[0], as, clock, keyA), connectionsOn(t, stores[1], as, clock, keyA)
	connect(t, ctx, a, as, person("alice", domain.RoleUser))
	if tok, _, err := b.Credential(ctx, gh, app.UpstreamPerson{Subject: "alice"}); err != nil || tok != as.issued["alice"][0] {
		t.Fatalf("the other instance: %q, %v; want the connection made on the first", tok, err)
	}
	for round := 1; round <= 3; round++ {
		clock.add(10 * time.Minute) // expired: every call needs the refresh
		var wg sync.WaitGroup
		got := make([]string, 16)
		errs := make([]error, len(got))
		for i := range got {
			c := []*app.Connections{a, b}[i%2]
			wg.Go(func() { got[i], _, errs[i] = c.Credential(ctx, gh, app.UpstreamPerson{Subject: "alice"}) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if n := as.refreshes.Load(); n != int64(round) {
			t.Fatalf("round %d: %d refreshes for 16 calls on two instances, want one per round", round, n)
		}
		want := as.issued["alice"][round]
		for i, tok := range got {
			if tok != want {
				t.Errorf("round %d, call %d: %q, want the refreshed token %q", round, i, tok, want)
			}
		}
	}
	if _, err := b.Remove(ctx, person("alice", domain.RoleUser), "", "gh"); err != nil {
		t.Fatal(err)
	}
	var nc *app.NotConnectedError
	if _, _, err := a.Credential(ctx, gh, app.UpstreamPerson{Subject: "alice"}); !errors.As(err, &nc) {
		t.Errorf("removed on one instance, the other = %v; want NotConnectedError at once", err)
	}
}
