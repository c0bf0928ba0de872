// Package hybrid runs agentauth as a local instance whose callers' roles come
// from a central agentauth instance and are never assigned locally. For each
// credential it asks the centre's GET /api/v2/me who the caller is, and keeps
// the answer for a short time in a bounded cache (internal/ttlcache) keyed by
// the credential's SHA-256 digest. Concurrent requests with one credential share one remote
// call.
//
// It fails closed: a credential the centre rejects is rejected (401); a centre
// that cannot be reached, is slow, answers 5xx or something unreadable, or
// names a role this instance does not know makes the request fail with 503.
// No role is ever granted by default, and an expired answer is never reused
// because the centre is down.
package hybrid

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/wire"
	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/agentauth/agentauth/adapters/telemetry"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/centreurl"
	"github.com/agentauth/agentauth/internal/tlsroots"
	"github.com/agentauth/agentauth/internal/ttlcache"
	"github.com/agentauth/agentauth/ports"
)

// mePath is the centre's endpoint that tells who a credential belongs to.
const mePath = "/api/v2/me"

// sessionCookie is the cookie the centre issues to logged-in users.
const sessionCookie = "user_session"

// maxBody bounds how much of the centre's answer is read.
const maxBody = 64 << 10

// Config configures the hybrid Authenticator; config.Defaults holds the
// values in force when nothing is configured.
type Config struct {
	// RemoteURL is the centre's base URL, such as https://auth.example.com.
	RemoteURL string
	// CAFile is a PEM bundle trusted for the centre in addition to the
	// system roots, for a centre behind an internal certificate authority.
	CAFile string
	// CacheTTL is how long an answer is reused: a role changed at the
	// centre takes effect here at most this much later.
	CacheTTL time.Duration
	// CacheSize bounds the number of cached credentials.
	CacheSize int
	// Timeout bounds one call to the centre.
	Timeout time.Duration
}

func (c Config) validate() error {
	var errs []error
	if err := centreurl.Check(c.RemoteURL); err != nil {
		errs = append(errs, fmt.Errorf("remote URL: %w", err))
	}
	if c.CacheTTL <= 0 {
		errs = append(errs, fmt.Errorf("cache TTL %s is not positive: %w", c.CacheTTL, domain.ErrInvalidInput))
	}
	if c.CacheSize <= 0 {
		errs = append(errs, fmt.Errorf("cache size %d is not positive: %w", c.CacheSize, domain.ErrInvalidInput))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout %s is not positive: %w", c.Timeout, domain.ErrInvalidInput))
	}
	return errors.Join(errs...)
}

// Authenticator asks the centre who each caller is.
type Authenticator struct {
	meURL  string
	source string // RoleSource of every principal: "remote <url>"
	ttl    time.Duration
	client *http.Client
	authz  *domain.Authorizer
	clock  ports.Clock
	log    *zap.Logger

	cache *ttlcache.Cache[cacheKey, domain.Principal]
	// flights makes concurrent requests with one credential wait for one
	// call to the centre instead of calling again.
	flights singleflight.Group
}

var _ ports.Authenticator = (*Authenticator)(nil)

// Set provides hybrid mode's Authenticator.
var Set = wire.NewSet(New, wire.Bind(new(ports.Authenticator), new(*Authenticator)))

// New returns an Authenticator for the centre at cfg.RemoteURL. Role names
// the centre returns must be known to authz (built-in or auth.roles). The
// cleanup closes idle connections to the centre.
func New(cfg Config, authz *domain.Authorizer, clock ports.Clock, log *zap.Logger) (*Authenticator, func(), error) {
	if err := cfg.validate(); err != nil {
		return nil, nil, fmt.Errorf("hybrid: %w", err)
	}
	tlsCfg, err := tlsConfig(cfg.CAFile)
	if err != nil {
		return nil, nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsCfg
	transport.MaxIdleConnsPerHost = 64
	cache, err := ttlcache.New[cacheKey, domain.Principal](cfg.CacheSize)
	if err != nil {
		return nil, nil, fmt.Errorf("hybrid: %w", err)
	}
	base := strings.TrimRight(cfg.RemoteURL, "/")
	a := &Authenticator{
		meURL:  base + mePath,
		source: "remote " + base,
		ttl:    cfg.CacheTTL,
		client: &http.Client{
			Transport: transport,
			Timeout:   cfg.Timeout,
			// A redirect would carry the credential somewhere else; the
			// centre's /me never redirects, so any redirect is an error.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		authz: authz,
		clock: clock,
		log:   log.Named("hybrid"),
		cache: cache,
	}
	return a, transport.CloseIdleConnections, nil
}

// tlsConfig trusts the system roots plus, when caFile is set, its bundle.
func tlsConfig(caFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return cfg, nil
	}
	pool, err := tlsroots.SystemPlus("auth.hybrid.caFile / SERVICE_HYBRID_CA_FILE", caFile)
	if err != nil {
		return nil, fmt.Errorf("hybrid: %w", err)
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// RoleSource is what /api/v2/me shows as role_source: "remote <url>".
func (a *Authenticator) RoleSource() string { return a.source }

// Authenticate returns the principal the centre names for cred, from the
// cache when a fresh answer is there.
func (a *Authenticator) Authenticate(ctx context.Context, cred ports.Credential) (domain.Principal, error) {
	if err := checkCredential(cred); err != nil {
		return domain.Principal{}, err
	}
	k := keyOf(cred)
	p, hit := a.cache.Get(k, a.clock.Now())
	telemetry.HybridLookup(hit)
	if hit {
		return p, nil
	}
	ch := a.flights.DoChan(k.flightKey(), func() (any, error) {
		// The answer is cached from the moment it was asked for, so it is
		// never kept longer than the TTL after the centre could have
		// changed it.
		asked := a.clock.Now()
		// The call is shared with other requests, so one caller giving up
		// must not fail the rest; the client's timeout still bounds it.
		p, err := a.fetch(context.WithoutCancel(ctx), cred)
		telemetry.HybridCalled(err)
		if err == nil {
			// Stored before the flight ends: a request arriving after it
			// finds the answer instead of calling again.
			a.cache.Put(k, p, asked.Add(a.ttl))
		}
		return p, err
	})
	select {
	case r := <-ch:
		return r.Val.(domain.Principal), r.Err
	case <-ctx.Done():
		return domain.Principal{}, unavailable(msgNoAnswer, fmt.Errorf("hybrid: waiting for the centre: %w: %w", ctx.Err(), domain.ErrUnavailable))
	}
}

// checkCredential refuses values that cannot be forwarded as a header or a
// cookie unchanged, instead of letting them reach the centre altered.
func checkCredential(cred ports.Credential) error {
	if cred.Kind != ports.CredentialBearer && cred.Kind != ports.CredentialCookie {
		return fmt.Errorf("hybrid: a Bearer token or the %s cookie is required: %w", sessionCookie, domain.ErrUnauthenticated)
	}
	if cred.Value == "" {
		return fmt.Errorf("hybrid: empty credential: %w", domain.ErrUnauthenticated)
	}
	for i := 0; i < len(cred.Value); i++ {
		b := cred.Value[i]
		bad := b < 0x21 || b == 0x7f
		if cred.Kind == ports.CredentialCookie {
			bad = bad || b == '"' || b == ',' || b == ';' || b == '\\'
		}
		if bad {
			return fmt.Errorf("hybrid: the credential contains a character that cannot be forwarded: %w", domain.ErrUnauthenticated)
		}
	}
	return nil
}

// meAnswer is the part of the centre's /api/v2/me this instance uses.
type meAnswer struct {
	Subject string    `json:"subject"`
	Name    string    `json:"name"`
	Roles   *[]string `json:"roles"`
	Method  string    `json:"method"`
	// Key is set when the credential is one of the centre's managed keys:
	// its scope narrows the roles here as there.
	Key *struct {
		ID          string              `json:"id"`
		Permissions []domain.Permission `json:"permissions"`
		Projects    []string            `json:"projects"`
		Tools       []string            `json:"tools"`
	} `json:"key"`
	// debug: the centre runs in debug mode (method "debug" or the answer
	// marked X-Auth-Debug).
	debug bool
}

// fetch asks the centre who cred belongs to. Its errors never contain the
// credential.
func (a *Authenticator) fetch(ctx context.Context, cred ports.Credential) (domain.Principal, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.meURL, nil)
	if err != nil {
		return domain.Principal{}, unavailable(msgNoAnswer, fmt.Errorf("hybrid: request to %s: %v: %w", a.meURL, err, domain.ErrUnavailable))
	}
	if cred.Kind == ports.CredentialCookie {
		req.Header.Set("Cookie", sessionCookie+"="+cred.Value)
	} else {
		req.Header.Set("Authorization", "Bearer "+cred.Value)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		a.log.Warn("centre did not answer; refusing the request", zap.String("remote", a.meURL), zap.Error(err))
		return domain.Principal{}, unavailable(msgNoAnswer, fmt.Errorf("hybrid: centre %s did not answer: %v: %w", a.meURL, err, domain.ErrUnavailable))
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody)) // lets the connection be reused
		resp.Body.Close()
	}()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusForbidden:
		// 403: the centre knows the credential but will not say whose it is,
		// so this instance cannot know the caller either.
		return domain.Principal{}, fmt.Errorf("hybrid: the centre rejected the credential (%d): %w", resp.StatusCode, domain.ErrUnauthenticated)
	default:
		a.log.Warn("centre answered with an unexpected status; refusing the request", zap.String("remote", a.meURL), zap.Int("status", resp.StatusCode))
		return domain.Principal{}, unavailable(msgBadAnswer, fmt.Errorf("hybrid: centre %s answered %d: %w", a.meURL, resp.StatusCode, domain.ErrUnavailable))
	}
	var me meAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&me); err != nil {
		a.log.Warn("centre answered something that is not a /me answer; refusing the request", zap.String("remote", a.meURL), zap.Error(err))
		return domain.Principal{}, unavailable(msgBadAnswer, fmt.Errorf("hybrid: centre %s answered malformed JSON: %v: %w", a.meURL, err, domain.ErrUnavailable))
	}
	me.debug = me.Method == string(domain.MethodDebug) || resp.Header.Get("X-Auth-Debug") != ""
	return a.principalOf(me)
}

// principalOf checks the centre's answer and turns it into a principal.
func (a *Authenticator) principalOf(me meAnswer) (domain.Principal, error) {
	if me.Subject == "" || me.Roles == nil {
		a.log.Warn("centre's /me answer lacks subject or roles; refusing the request", zap.String("remote", a.meURL))
		return domain.Principal{}, unavailable(msgBadAnswer, fmt.Errorf("hybrid: centre %s answered without subject or roles: %w", a.meURL, domain.ErrUnavailable))
	}
	roles := make([]domain.Role, 0, len(*me.Roles))
	for _, name := range *me.Roles {
		r := domain.Role(name)
		if !a.authz.Knows(r) {
			a.log.Warn("centre granted a role this instance does not know; refusing the request", zap.String("remote", a.meURL), zap.String("role", name))
			return domain.Principal{}, unavailable(msgUnknownRole, fmt.Errorf("hybrid: centre %s granted role %q, which this instance does not know (define it in auth.roles here too): %w", a.meURL, name, domain.ErrUnavailable))
		}
		roles = append(roles, r)
	}
	method := domain.MethodHybrid
	if me.debug {
		// A debug key stays a debug principal here, so the edge serves it
		// only on loopback (and a further edge asking this one sees it too).
		method = domain.MethodDebug
	}
	p := domain.Principal{Subject: me.Subject, Name: domain.PersonNameOf(me.Name), Roles: roles, Method: method, RoleSource: a.source}
	switch {
	case me.Key != nil:
		p.Key = &domain.KeyScope{ID: me.Key.ID, Owner: me.Subject, Permissions: domain.NewPermissionSet(me.Key.Permissions),
			Projects: me.Key.Projects, Tools: me.Key.Tools}
	case me.Method == string(domain.MethodManagedKey):
		// A managed key whose scope the centre did not say: nothing can
		// be allowed for it without widening it to its owner's roles.
		a.log.Warn("centre answered a managed key without its scope; refusing the request", zap.String("remote", a.meURL))
		return domain.Principal{}, unavailable(msgBadAnswer, fmt.Errorf("hybrid: centre %s answered a managed key without its scope: %w", a.meURL, domain.ErrUnavailable))
	}
	return p, nil
}

// Messages for the callers of a 503: they say what failed, not how.
const (
	msgNoAnswer    = "hybrid mode: the central agentauth instance that assigns roles did not answer; retry later"
	msgBadAnswer   = "hybrid mode: the central agentauth instance that assigns roles gave no usable answer; retry later"
	msgUnknownRole = "hybrid mode: the central agentauth instance granted a role this instance does not know; the operator must define it in auth.roles"
)

// unavailableError is a 503 whose ClientMessage the HTTP edge shows; the
// full error, with the centre's address and cause, goes to the log and the
// audit record.
type unavailableError struct {
	client string
	err    error
}

func unavailable(client string, err error) error { return &unavailableError{client: client, err: err} }

func (e *unavailableError) Error() string         { return e.err.Error() }
func (e *unavailableError) Unwrap() error         { return e.err }
func (e *unavailableError) ClientMessage() string { return e.client }

// cached reports how many credentials the cache holds, for tests.
func (a *Authenticator) cached() int { return a.cache.Len() }
