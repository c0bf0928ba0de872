package app

// Each person's own credential upstream: a server registered with
// upstream_auth receives, for every call an agent makes, its owner's own
// token. Type oauth2: the person connects their account at the upstream's
// authorization server once (GET /connect/{server}, the code flow with
// PKCE); the tokens are kept per (person, server), sealed, refreshed
// before they expire by one instance at a time. Type token_exchange: the
// person's provider token is exchanged (RFC 8693) for one issued to the
// server's audience, kept in memory until shortly before it expires.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/ttlcache"
	"github.com/agentauth/agentauth/ports"
)

// ConnectionsConfig configures people's own credentials upstream.
type ConnectionsConfig struct {
	// Keys seal the tokens at rest (32 bytes each): the first seals, every
	// one opens (the previous key after a rotation). None: connections
	// (type oauth2) are off, and say which setting turns them on.
	Keys [][]byte
	// Base is the API's public URL with the base path: a person connects
	// at {Base}/connect/{server}, which comes back to
	// {Base}/connect/{server}/callback.
	Base string
	// RefreshBefore: an access token that expires within it is refreshed
	// before it is sent. Lease bounds one instance's refresh, which the
	// others wait for (reading the connection every Poll).
	RefreshBefore, Lease, Poll time.Duration
	// ExchangeBefore: an exchanged token is sent until this long before
	// it expires, then exchanged again.
	ExchangeBefore time.Duration
}

// connectTTL bounds the time between GET /connect/{server} and its
// callback.
const connectTTL = 10 * time.Minute

// exchangeCacheSize bounds the exchanged tokens kept in memory.
const exchangeCacheSize = 4096

// Connections is the use case of people's own credentials upstream.
type Connections struct {
	cfg     ConnectionsConfig
	store   ports.ConnectionStore
	servers ports.CatalogStore
	auth    ports.UpstreamAuthorizer
	authz   *domain.Authorizer
	clock   ports.Clock
	// seal is nil when no key is configured.
	seal *sealer
	// owners tells who is suspended (nil: hybrid mode, none known);
	// logins give a person's provider token (nil: no OIDC logins).
	owners *APIKeys
	logins *Login
	// exchanged keeps exchanged tokens by (subject token, server).
	exchanged *ttlcache.Cache[string, string]
}

// NewConnections builds the use case; servers are read through the
// registry (from memory).
func NewConnections(cfg ConnectionsConfig, store ports.ConnectionStore, servers ports.CatalogStore, auth ports.UpstreamAuthorizer,
	authz *domain.Authorizer, clock ports.Clock) (*Connections, error) {
	c := &Connections{cfg: cfg, store: store, servers: servers, auth: auth, authz: authz, clock: clock}
	if len(cfg.Keys) > 0 {
		s, err := newSealer("gateway.connections key", cfg.Keys...)
		if err != nil {
			return nil, err
		}
		c.seal = s
	}
	var err error
	if c.exchanged, err = ttlcache.New[string, string](exchangeCacheSize); err != nil {
		return nil, err
	}
	return c, nil
}

// WithPeople makes suspended people (keys.Suspended) lose their
// connections' use at once, and token exchange read a person's provider
// token from their login session (logins nil: only a provider Bearer
// token the request carries).
func (c *Connections) WithPeople(keys *APIKeys, logins *Login) *Connections {
	c.owners, c.logins = keys, logins
	return c
}

// ConnectURL is where a person connects server.
func (c *Connections) ConnectURL(server string) string {
	return strings.TrimSuffix(c.cfg.Base, "/") + "/connect/" + url.PathEscape(server)
}

// redirectURI is the callback of server's connect flow.
func (c *Connections) redirectURI(server string) string { return c.ConnectURL(server) + "/callback" }

// NotConnectedError is a call refused before it was forwarded: the
// person has no working credential for the server's upstream. URL is
// where they get one (connect, or sign in for a token exchange).
type NotConnectedError struct {
	Server, URL, Why string
}

func (e *NotConnectedError) Error() string {
	return fmt.Sprintf("not connected to server %s: %s; connect at %s", e.Server, e.Why, e.URL)
}

// Is makes errors.Is(err, domain.ErrForbidden) hold.
func (e *NotConnectedError) Is(target error) bool { return target == domain.ErrForbidden }

// errConnectionsOff is the answer when no key seals connections.
var errConnectionsOff error = unavailableBecause("people's connections are off on this instance: set gateway.connections.keyFile " +
	"(SERVICE_GATEWAY_CONNECTIONS_KEY_FILE), the same key on every instance")

// unavailableBecause is a 503 whose message is written for the caller.
type unavailableBecause string

func (e unavailableBecause) Error() string         { return string(e) }
func (e unavailableBecause) ClientMessage() string { return string(e) }
func (e unavailableBecause) Is(target error) bool  { return target == domain.ErrUnavailable }

// upstreamUnavailable says which server's authorization server failed,
// and how, to the person connecting (never a secret: URLs and statuses).
func upstreamUnavailable(server string, err error) error {
	if !errors.Is(err, domain.ErrUnavailable) {
		return err
	}
	return errors.Join(err, unavailableBecause("the authorization server of server "+server+" failed: "+err.Error()))
}

// connectable is server as a person connects it: registered with
// upstream_auth type oauth2.
func (c *Connections) connectable(ctx context.Context, server string) (domain.Server, error) {
	sv, err := c.servers.GetServer(ctx, server)
	if err != nil {
		return sv, err
	}
	if sv.UpstreamAuth == nil || sv.UpstreamAuth.Type != domain.UpstreamOAuth2 {
		return sv, fmt.Errorf("server %s takes no connections: its registration has no upstream_auth of type oauth2: %w", server, domain.ErrInvalidInput)
	}
	if c.seal == nil {
		return sv, errConnectionsOff
	}
	return sv, nil
}

// tokenAD binds a sealed token to its row.
func tokenAD(subject, server string) string { return "connection\x00" + subject + "\x00" + server }

// Begin starts p's connection to server and returns where its browser
// goes: the authorization server's authorization endpoint. returnTo is
// where the callback sends it at the end ("" the console's connections).
func (c *Connections) Begin(ctx context.Context, p domain.Principal, server, returnTo string) (string, error) {
	if returnTo == "" {
		returnTo = "/console/connections"
	}
	if !SafeReturnTo(returnTo) {
		return "", fmt.Errorf("return_to must be a relative path on this site, such as /console/connections: %w", domain.ErrInvalidInput)
	}
	sv, err := c.connectable(ctx, server)
	if err != nil {
		return "", err
	}
	as, err := c.auth.Discover(ctx, sv)
	if err != nil {
		return "", upstreamUnavailable(sv.Name, err)
	}
	state, verifier := randomToken(), randomToken()
	now := c.clock.Now()
	hash := Digest(state)
	r := ports.ConnectRequest{StateHash: hash, Subject: p.Subject, Server: sv.Name, Issuer: as.Issuer, ClientID: as.ClientID,
		CodeVerifier: c.seal.seal(verifier, "connect\x00"+hash), Resource: as.Resource, ReturnTo: returnTo, ExpiresAt: now.Add(connectTTL)}
	if err := c.store.PutConnectRequest(ctx, r, now); err != nil {
		return "", err
	}
	return c.auth.AuthCodeURL(as, state, verifier, c.redirectURI(sv.Name)), nil
}

// Connected is a connection as it was made (its tokens sealed), and where
// the person's browser goes next.
type Connected struct {
	Connection domain.Connection
	ReturnTo   string
	// Replaced: the person was connected before; those tokens were
	// revoked where the authorization server offers revocation.
	Replaced bool
}

// Callback completes p's connection to server with what the
// authorization server sent back. The state is single use and bound to
// the person who began: another person's callback is refused.
func (c *Connections) Callback(ctx context.Context, p domain.Principal, server, state, code, refused string) (Connected, error) {
	if state == "" {
		return Connected{}, fmt.Errorf("connect callback without state: %w", domain.ErrInvalidInput)
	}
	sv, err := c.connectable(ctx, server)
	if err != nil {
		return Connected{}, err
	}
	now := c.clock.Now()
	hash := Digest(state)
	r, err := c.store.TakeConnectRequest(ctx, hash, now)
	if errors.Is(err, domain.ErrNotFound) {
		return Connected{}, fmt.Errorf("connect callback: unknown, expired or already used state; connect again at %s: %w", c.ConnectURL(server), domain.ErrInvalidInput)
	}
	if err != nil {
		return Connected{}, err
	}
	if r.Subject != p.Subject || r.Server != sv.Name {
		return Connected{}, &domain.Refusal{Code: domain.ReasonNotConnectOwner, Missing: domain.PermConnectionsWrite,
			Message: "this connect request was begun by another person, or for another server"}
	}
	if refused != "" {
		return Connected{}, fmt.Errorf("the authorization server refused the connection (%s): %w", sanitize(refused), domain.ErrInvalidInput)
	}
	if code == "" {
		return Connected{}, fmt.Errorf("connect callback without code: %w", domain.ErrInvalidInput)
	}
	as, err := c.auth.Discover(ctx, sv)
	if err != nil {
		return Connected{}, upstreamUnavailable(sv.Name, err)
	}
	if as.Issuer != r.Issuer || as.ClientID != r.ClientID {
		return Connected{}, fmt.Errorf("server %s's upstream_auth changed while connecting; connect again: %w", sv.Name, domain.ErrConflict)
	}
	as.Resource = r.Resource
	verifier, _, err := c.seal.open(r.CodeVerifier, "connect\x00"+hash)
	if err != nil {
		return Connected{}, fmt.Errorf("connect request: %w: %w", err, domain.ErrInvalidInput)
	}
	toks, err := c.auth.ExchangeCode(ctx, as, code, verifier, c.redirectURI(sv.Name))
	if err != nil {
		return Connected{}, upstreamUnavailable(sv.Name, err)
	}
	if toks.AccessToken == "" {
		return Connected{}, fmt.Errorf("the authorization server issued no access token: %w", domain.ErrUnavailable)
	}
	ad := tokenAD(p.Subject, sv.Name)
	conn := domain.Connection{ID: newID("conn_"), Subject: p.Subject, Server: sv.Name, Issuer: as.Issuer, ClientID: as.ClientID,
		UpstreamSubject: toks.Subject, Scopes: toks.Scopes, Status: domain.ConnectionActive,
		AccessToken: c.seal.seal(toks.AccessToken, ad), RefreshToken: c.seal.seal(toks.RefreshToken, ad),
		ExpiresAt: toks.Expiry, CreatedAt: now.UTC(), Version: 1}
	old, oldErr := c.store.GetConnection(ctx, p.Subject, sv.Name)
	if err := c.store.PutConnection(ctx, conn); err != nil {
		return Connected{}, err
	}
	out := Connected{Connection: conn, ReturnTo: r.ReturnTo, Replaced: oldErr == nil}
	if oldErr == nil && old.Issuer == as.Issuer {
		c.revoke(ctx, as, old) // the tokens replaced are no one's any more
	}
	return out, nil
}

// revoke revokes a connection's tokens, the refresh token first (which,
// at most servers, ends the access tokens issued with it). It reports
// whether the authorization server offers revocation; a failure is
// returned for the record, the connection is gone either way.
func (c *Connections) revoke(ctx context.Context, as ports.UpstreamAS, conn domain.Connection) (bool, error) {
	ad := tokenAD(conn.Subject, conn.Server)
	var errs []error
	offered := false
	for _, t := range []struct{ sealed, hint string }{{conn.RefreshToken, "refresh_token"}, {conn.AccessToken, "access_token"}} {
		tok, _, err := c.seal.open(t.sealed, ad)
		if err != nil || tok == "" {
			continue
		}
		ok, err := c.auth.Revoke(ctx, as, tok, t.hint)
		offered = offered || ok
		errs = append(errs, err)
	}
	return offered, errors.Join(errs...)
}

// ConnectionPage is a page of connections, tokens left out.
type ConnectionPage = Page[domain.Connection]

// List returns a page of p's connections, or everyone's when p holds
// connections:audit or connections:manage (ADMIN, AUDITOR). The tokens
// are never part of what it returns.
func (c *Connections) List(ctx context.Context, p domain.Principal, req PageRequest) (ConnectionPage, error) {
	subject := p.Subject
	if c.authz.Allow(p, domain.PermConnectionsAudit).Allowed || c.authz.Allow(p, domain.PermConnectionsManage).Allowed {
		subject = ""
	}
	page, err := req.store()
	if err != nil {
		return ConnectionPage{}, err
	}
	list, err := c.store.ListConnections(ctx, subject, page)
	if err != nil {
		return ConnectionPage{}, err
	}
	for i := range list {
		list[i].AccessToken, list[i].RefreshToken = "", ""
	}
	return pageOf(list, page, func(x domain.Connection) ports.Cursor { return ports.CursorOf(x.CreatedAt, x.ID) }, nil), nil
}

// maxConnectable bounds the servers Connectable reads.
const maxConnectable = 1000

// Connectable lists the servers a person may connect (upstream_auth type
// oauth2), by name.
func (c *Connections) Connectable(ctx context.Context) ([]domain.Server, error) {
	var out []domain.Server
	page := ports.Page{Limit: 200}
	for read := 0; read < maxConnectable; {
		list, err := c.servers.ListServers(ctx, page)
		if err != nil {
			return nil, err
		}
		for _, sv := range list {
			if sv.UpstreamAuth != nil && sv.UpstreamAuth.Type == domain.UpstreamOAuth2 {
				out = append(out, sv)
			}
		}
		read += len(list)
		if len(list) < page.Limit {
			break
		}
		last := list[len(list)-1]
		page.After = ports.CursorOf(last.CreatedAt, last.Name)
	}
	slices.SortFunc(out, func(a, b domain.Server) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Removed is a connection removed: whether its tokens were revoked at
// the authorization server, and why not when that failed.
type Removed struct {
	Connection domain.Connection
	// Revoked: the authorization server took the revocation (RFC 7009);
	// Offered: it has a revocation endpoint.
	Revoked, Offered bool
	RevokeError      string
}

// String says what the removal did, for its audit record.
func (r Removed) String() string {
	x := r.Connection
	s := "removed the connection of " + x.Subject + " to server " + x.Server
	switch {
	case r.Revoked:
		return s + "; its tokens revoked at " + x.Issuer + " (RFC 7009)"
	case r.RevokeError != "":
		return s + "; revoking its tokens failed: " + r.RevokeError
	case !r.Offered:
		return s + "; " + x.Issuer + " offers no revocation: its tokens stay valid there until they expire"
	}
	return s
}

// Remove removes subject's connection to server (subject "" is p's own):
// another person's needs connections:manage. The tokens are revoked at
// the authorization server where it offers revocation; the connection is
// gone either way, and no call uses it from then on, on any instance.
func (c *Connections) Remove(ctx context.Context, p domain.Principal, subject, server string) (Removed, error) {
	if subject == "" {
		subject = p.Subject
	}
	if subject != p.Subject && !c.authz.Allow(p, domain.PermConnectionsManage).Allowed {
		return Removed{}, &domain.Refusal{Code: domain.ReasonRoleLacksPermission, Missing: domain.PermConnectionsManage,
			Message: "removing another person's connection needs connections:manage"}
	}
	if c.seal == nil {
		return Removed{}, errConnectionsOff
	}
	conn, err := c.store.DeleteConnection(ctx, subject, server)
	if err != nil {
		return Removed{}, err
	}
	out := Removed{Connection: conn}
	out.Connection.AccessToken, out.Connection.RefreshToken = "", ""
	sv, err := c.servers.GetServer(ctx, server)
	if err == nil && sv.UpstreamAuth != nil {
		var as ports.UpstreamAS
		if as, err = c.auth.Discover(ctx, sv); err == nil && as.Issuer == conn.Issuer {
			out.Offered, err = c.revoke(ctx, as, conn)
			out.Revoked = out.Offered && err == nil
		}
	}
	if err != nil {
		out.RevokeError = err.Error()
	}
	return out, nil
}

// UpstreamPerson is the person a gateway call is made for.
type UpstreamPerson struct {
	Subject string
	// ProviderToken is the person's access token from the identity
	// provider when the request carried one (a provider Bearer token);
	// "" reads it from the person's login session.
	ProviderToken string
}

// Credential is the token the gateway sends sv for person, and what the
// audit record says of it (never the token).
func (c *Connections) Credential(ctx context.Context, sv domain.Server, who UpstreamPerson) (token, note string, err error) {
	u := sv.UpstreamAuth
	if u == nil {
		return "", "", fmt.Errorf("server %s has no upstream_auth: %w", sv.Name, domain.ErrInvalidInput)
	}
	if c.owners != nil {
		suspended, err := c.owners.Suspended(ctx, who.Subject)
		if err != nil {
			return "", "", err
		}
		if suspended {
			return "", "", &NotConnectedError{Server: sv.Name, URL: c.ConnectURL(sv.Name),
				Why: who.Subject + " is suspended (logged out by the identity provider, or disabled by an ADMIN)"}
		}
	}
	if u.Type == domain.UpstreamTokenExchange {
		return c.exchange(ctx, sv, who)
	}
	if c.seal == nil {
		return "", "", errConnectionsOff
	}
	conn, err := c.store.GetConnection(ctx, who.Subject, sv.Name)
	if errors.Is(err, domain.ErrNotFound) {
		return "", "", &NotConnectedError{Server: sv.Name, URL: c.ConnectURL(sv.Name), Why: who.Subject + " has not connected it"}
	}
	if err != nil {
		return "", "", err
	}
	return c.use(ctx, sv, conn)
}

// use is a connection's access token, refreshed first when it expires
// soon.
func (c *Connections) use(ctx context.Context, sv domain.Server, conn domain.Connection) (string, string, error) {
	note := "connection of " + conn.Subject
	for {
		if conn.Status != domain.ConnectionActive {
			return "", note + " broken", &NotConnectedError{Server: sv.Name, URL: c.ConnectURL(sv.Name),
				Why: "the connection of " + conn.Subject + " broke (the authorization server refused its refresh: " + conn.Broken + "); connect again"}
		}
		now := c.clock.Now()
		if conn.ExpiresAt.IsZero() || now.Add(c.cfg.RefreshBefore).Before(conn.ExpiresAt) || conn.RefreshToken == "" {
			if !conn.ExpiresAt.IsZero() && !now.Before(conn.ExpiresAt) {
				return "", note + " expired", &NotConnectedError{Server: sv.Name, URL: c.ConnectURL(sv.Name),
					Why: "the access token of " + conn.Subject + " expired and came without a refresh token; connect again"}
			}
			tok, err := c.open(ctx, conn)
			return tok, note, err
		}
		taken, err := c.store.LeaseRefresh(ctx, conn.Subject, conn.Server, conn.Version, now, now.Add(c.cfg.Lease))
		if err != nil {
			return "", note, err
		}
		if taken {
			return c.refresh(ctx, sv, conn)
		}
		// Another request refreshes it: wait for its token. The current
		// one is not sent meanwhile: authorization servers revoke the
		// access token a refresh replaces (Ory Hydra does), so it would be
		// refused on its way.
		if conn, err = c.awaitRefresh(ctx, conn); err != nil {
			return "", note, err
		}
	}
}

// awaitRefresh waits until conn is written by the request refreshing it
// (at once when it was, since it was read), or its lease runs out (the
// next loop takes it).
func (c *Connections) awaitRefresh(ctx context.Context, conn domain.Connection) (domain.Connection, error) {
	deadline := time.NewTimer(c.cfg.Lease)
	defer deadline.Stop()
	tick := time.NewTicker(c.cfg.Poll)
	defer tick.Stop()
	for {
		latest, err := c.store.GetConnection(ctx, conn.Subject, conn.Server)
		if err != nil || latest.Version != conn.Version {
			return latest, err
		}
		select {
		case <-ctx.Done():
			return conn, ctx.Err()
		case <-deadline.C:
			return latest, nil
		case <-tick.C:
		}
	}
}

// open is the access token of conn, sealed again under the current key
// when a previous key opened it.
func (c *Connections) open(ctx context.Context, conn domain.Connection) (string, error) {
	ad := tokenAD(conn.Subject, conn.Server)
	tok, previous, err := c.seal.open(conn.AccessToken, ad)
	if err != nil {
		return "", fmt.Errorf("connection of %s to %s: %w (was the key replaced without gateway.connections.previousKeyFile?)", conn.Subject, conn.Server, err)
	}
	if previous {
		// Sealed again under the lease, so as not to cross a refresh.
		now := c.clock.Now()
		refresh, _, err := c.seal.open(conn.RefreshToken, ad)
		if taken, lerr := c.store.LeaseRefresh(ctx, conn.Subject, conn.Server, conn.Version, now, now.Add(c.cfg.Lease)); err == nil && lerr == nil && taken {
			next := conn
			next.Version++
			next.AccessToken, next.RefreshToken = c.seal.seal(tok, ad), c.seal.seal(refresh, ad)
			_ = c.store.UpdateConnection(ctx, next) // removed meanwhile: nothing to seal
		}
	}
	return tok, nil
}

// refresh renews conn's tokens under the lease this request holds. A
// refusal marks the connection broken; an authorization server out of
// reach leaves it, and the access token serves while it holds.
func (c *Connections) refresh(ctx context.Context, sv domain.Server, conn domain.Connection) (string, string, error) {
	note := "connection of " + conn.Subject
	ad := tokenAD(conn.Subject, conn.Server)
	now := c.clock.Now()
	next := conn
	next.Version++
	as, err := c.auth.Discover(ctx, sv)
	var toks ports.UpstreamTokens
	if err == nil {
		var rt string
		if rt, _, err = c.seal.open(conn.RefreshToken, ad); err == nil {
			toks, err = c.auth.Refresh(ctx, as, rt)
		}
	}
	var refusal *ports.UpstreamRefusal
	switch {
	case errors.As(err, &refusal) && refusal.Code == "invalid_grant":
		next.Status, next.Broken, next.AccessToken, next.RefreshToken = domain.ConnectionBroken, refusal.Code, "", ""
		if uerr := c.store.UpdateConnection(ctx, next); uerr != nil && !errors.Is(uerr, domain.ErrNotFound) {
			return "", note, uerr
		}
		return "", note + " broken: refresh refused (" + refusal.Code + ")", &NotConnectedError{Server: sv.Name, URL: c.ConnectURL(sv.Name),
			Why: "the authorization server refused to refresh the connection of " + conn.Subject + " (" + refusal.Code + "); connect again"}
	case err != nil:
		// The lease ends with this write, so that the next request tries.
		_ = c.store.UpdateConnection(ctx, next)
		if now.Before(conn.ExpiresAt) {
			tok, oerr := c.open(ctx, next)
			return tok, note + " (refresh failed, the access token still holds: " + err.Error() + ")", oerr
		}
		return "", note + " refresh failed", fmt.Errorf("refresh of the connection of %s to %s: %w", conn.Subject, sv.Name, err)
	}
	next.AccessToken, next.ExpiresAt, next.RefreshedAt = c.seal.seal(toks.AccessToken, ad), toks.Expiry, now.UTC()
	if toks.RefreshToken != "" {
		next.RefreshToken = c.seal.seal(toks.RefreshToken, ad)
	}
	if len(toks.Scopes) > 0 {
		next.Scopes = toks.Scopes
	}
	switch err := c.store.UpdateConnection(ctx, next); {
	case errors.Is(err, domain.ErrNotFound):
		return "", note, &NotConnectedError{Server: sv.Name, URL: c.ConnectURL(sv.Name), Why: "the connection of " + conn.Subject + " was removed"}
	case errors.Is(err, domain.ErrConflict):
		// The lease ran out under a slow refresh and another request
		// wrote first: this access token is valid all the same.
		return toks.AccessToken, note + " (refreshed; another refresh was written first)", nil
	case err != nil:
		return "", note, err
	}
	return toks.AccessToken, note + " (refreshed)", nil
}

// exchange is a token issued to sv's audience on behalf of the person
// (RFC 8693), kept until shortly before it expires.
func (c *Connections) exchange(ctx context.Context, sv domain.Server, who UpstreamPerson) (string, string, error) {
	note := "token exchange for " + who.Subject
	subjectToken := who.ProviderToken
	if subjectToken == "" && c.logins != nil && c.logins.ProviderEnabled() {
		tok, err := c.logins.ProviderToken(ctx, who.Subject)
		if err != nil && !errors.Is(err, domain.ErrUnauthenticated) {
			return "", note, err
		}
		subjectToken = tok
	}
	if subjectToken == "" {
		signIn := strings.TrimSuffix(c.cfg.Base, "/") + "/auth/login"
		return "", note, &NotConnectedError{Server: sv.Name, URL: signIn,
			Why: who.Subject + " has no identity-provider token to exchange: sign in to agentauth (a login session), or call with your provider access token"}
	}
	key := Digest(subjectToken) + "\x00" + sv.Name + "\x00" + domain.EncodeUpstreamAuth(sv.UpstreamAuth)
	now := c.clock.Now()
	if tok, ok := c.exchanged.Get(key, now); ok {
		return tok, note + " (kept)", nil
	}
	as, err := c.auth.Discover(ctx, sv)
	if err != nil {
		return "", note, err
	}
	toks, err := c.auth.Exchange(ctx, as, subjectToken)
	var refusal *ports.UpstreamRefusal
	if errors.As(err, &refusal) {
		return "", note + " refused (" + refusal.Code + ")", fmt.Errorf("the token exchange for server %s was refused: %w", sv.Name, err)
	}
	if err != nil {
		return "", note, err
	}
	if until := toks.Expiry.Add(-c.cfg.ExchangeBefore); !toks.Expiry.IsZero() && now.Before(until) {
		c.exchanged.Put(key, toks.AccessToken, until)
	}
	return toks.AccessToken, note, nil
}
