// Package keycloak is agentauth's OpenID Connect client: of a Keycloak
// realm, or with Config.Generic of any OpenID provider. Both take one
// protocol path: discovery (issuer checked, retried with backoff while the
// provider is unreachable), trust through the system roots plus the
// configured CA bundles, local verification of id and access tokens against
// a cached JWKS (internal/jwks) through go-oidc, and the code flow with
// PKCE, the password and refresh grants and introspection through
// golang.org/x/oauth2 and the discovery document's endpoints.
//
// Keycloak is a specialisation of that path, as oauth2-proxy's
// keycloak_oidc.go is of its OIDC provider: the issuer has the form
// https://<host>/realms/<realm>; a token response must carry an access
// token that is a JWT of this client, and roles come from its realm_access
// and resource_access (domain.ExtractRoles); logout calls Keycloak's own
// logout endpoint through gocloak. A generic provider's issuer may have any
// form, its access token may be opaque (roles then come from the id token
// or userinfo), and logout revokes the refresh token (RFC 7009).
//
// Provider implements ports.IdentityProvider for the login use case;
// Authenticator implements ports.Authenticator for Bearer access tokens and
// never calls the provider for a token it has already verified.
package keycloak

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Nerzal/gocloak/v13"
	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-resty/resty/v2"
	"github.com/google/wire"
	"go.uber.org/zap"
	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/adapters/telemetry"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/jwks"
	"github.com/agentauth/agentauth/internal/tlsroots"
	"github.com/agentauth/agentauth/ports"
)

// Config is the client's settings (auth.oidc.*).
type Config struct {
	// Issuer is https://<host>/realms/<realm>: what tokens must carry and
	// where browsers are sent.
	Issuer string
	// DiscoveryURL is where the service itself reaches the provider when
	// that is not Issuer (an internal URL of the same realm): discovery,
	// keys, token, logout and introspection go there. Empty: Issuer.
	DiscoveryURL string
	ClientID     string
	ClientSecret string
	RedirectURI  string
	// CAFiles are PEM bundles trusted in addition to the system roots
	// (SERVICE_OIDC_CA_FILE, NODE_EXTRA_CA_CERTS).
	CAFiles []string
	RoleMap map[string]domain.Role
	// Skew is the clock difference tolerated on exp, nbf and iat (may be
	// 0). It, HTTPTimeout, KeyRefetch and CacheSize are taken as given:
	// config.Defaults holds the values in force when nothing is configured.
	Skew time.Duration
	// HTTPTimeout bounds each call to the provider.
	HTTPTimeout time.Duration
	// KeyRefetch is the least time between two JWKS fetches caused by an
	// unknown key id.
	KeyRefetch time.Duration
	// CacheSize bounds the verified Bearer-token cache.
	CacheSize int
	// Now tells the time; nil means time.Now.
	Now func() time.Time
	// Additional are further issuers whose access tokens the Bearer
	// authenticator accepts; logins stay on Issuer.
	Additional []Trusted
	// Generic: the provider is any OpenID provider, not Keycloak. The
	// issuer may have any form, and the password grant, refresh, logout
	// (revocation) and introspection use the endpoints of the discovery
	// document instead of Keycloak's URL layout.
	Generic bool
	// RolesClaim is the dotted path of the claim holding role names
	// (domain.ExtractRolesAt); empty: Keycloak's realm_access and
	// resource_access.<clientId> (domain.ExtractRoles).
	RolesClaim string
	// Audience is a further aud value that marks a Bearer access token as
	// meant for this service (an API identifier), besides the client id.
	Audience string
	// GatewayResourceBase is the MCP gateway's resource base URL: a Bearer
	// access token whose aud names {GatewayResourceBase}/mcp/{server}
	// (RFC 8707) is admitted, though issued to another client, as
	// resource-only (domain.Principal.ResourceOnly). Empty: none.
	GatewayResourceBase string
	// IntrospectionURL, when set, is the RFC 7662 endpoint used instead of
	// the discovery document's, which may list none (Ory Hydra keeps it on
	// its admin API).
	IntrospectionURL string
	// SubjectClaim names the claim the principal's subject is read from;
	// empty: sub. Tokens must carry sub all the same.
	SubjectClaim string
	// Scopes are asked for in the code flow; nil: DefaultScopes, plus
	// offline_access for a generic provider that lists it.
	Scopes []string

	// bearerOnly: an issuer of Additional, used only to verify access
	// tokens (no client secret).
	bearerOnly bool
}

// Trusted is one further issuer of Bearer access tokens.
type Trusted struct {
	Issuer       string
	DiscoveryURL string
	// ClientID is the azp, or a member of aud, its tokens must name.
	ClientID string
	// CAFiles are added to the primary's CAFiles for this issuer.
	CAFiles []string
}

func (c Config) validate() error {
	var errs []error
	u, err := url.Parse(c.Issuer)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		errs = append(errs, fmt.Errorf("issuer %q is not an http(s) URL", c.Issuer))
	} else if _, _, err := splitIssuer(c.Issuer); err != nil && !c.Generic {
		errs = append(errs, err)
	}
	if c.DiscoveryURL != "" {
		if d, err := url.Parse(c.DiscoveryURL); err != nil || d.Host == "" || (d.Scheme != "https" && d.Scheme != "http") {
			errs = append(errs, fmt.Errorf("discovery URL %q is not an http(s) URL", c.DiscoveryURL))
		} else if !c.Generic { // a generic provider's URLs may have any form
			if _, realm, err := splitIssuer(c.DiscoveryURL); err != nil {
				errs = append(errs, fmt.Errorf("discovery URL: %w", err))
			} else if _, want, _ := splitIssuer(c.Issuer); realm != want {
				errs = append(errs, fmt.Errorf("discovery URL %q names realm %q, the issuer %q", c.DiscoveryURL, realm, want))
			}
		}
	}
	if c.ClientID == "" {
		errs = append(errs, errors.New("client id is empty"))
	}
	if c.Skew < 0 || c.HTTPTimeout <= 0 || c.KeyRefetch <= 0 || c.CacheSize <= 0 {
		errs = append(errs, fmt.Errorf("skew %s, HTTP timeout %s, key refetch interval %s and cache size %d must be positive (skew may be 0)",
			c.Skew, c.HTTPTimeout, c.KeyRefetch, c.CacheSize))
	}
	if c.ClientSecret == "" && !c.bearerOnly {
		errs = append(errs, errors.New("client secret is empty"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", err, domain.ErrInvalidInput)
	}
	return nil
}

// backChannel is the URL the service reaches the realm at.
func (c Config) backChannel() string {
	if c.DiscoveryURL != "" {
		return c.DiscoveryURL
	}
	return c.Issuer
}

// internal moves an endpoint the discovery document names under the
// public issuer to the discovery URL, for the calls the service makes
// itself; other URLs, and every URL without a discovery URL, stay.
func (c Config) internal(endpoint string) string {
	public := strings.TrimSuffix(c.Issuer, "/") + "/" // an issuer may end in "/" (OpenID Discovery 4.3: as discovered)
	if c.DiscoveryURL == "" || !strings.HasPrefix(endpoint, public) {
		return endpoint
	}
	return strings.TrimSuffix(c.DiscoveryURL, "/") + "/" + endpoint[len(public):]
}

// IssuerMismatchError is a discovery document naming another issuer than
// the configured one: a configuration error that stops the start.
type IssuerMismatchError struct {
	Configured, Discovered string
	// URL is the document's URL; Split says it came from the discovery URL.
	URL   string
	Split bool
}

func (e *IssuerMismatchError) Error() string {
	if e.Split {
		return fmt.Sprintf("the discovery document at %s (auth.oidc.discoveryUrl / SERVICE_OIDC_DISCOVERY_URL) names issuer %q, "+
			"but auth.oidc.issuer / SERVICE_OIDC_ISSUER is %q: set the issuer to the provider's public issuer, the one its tokens carry "+
			"(Keycloak: the realm URL under KC_HOSTNAME)", e.URL, e.Discovered, e.Configured)
	}
	return fmt.Sprintf("the discovery document at %s names issuer %q, but auth.oidc.issuer / SERVICE_OIDC_ISSUER is %q: "+
		"set the issuer to exactly what the provider's tokens carry; if the service reaches the provider at another URL than that "+
		"public one (an internal cluster URL), set auth.oidc.issuer to the public issuer and auth.oidc.discoveryUrl / "+
		"SERVICE_OIDC_DISCOVERY_URL to the URL the service reaches", e.URL, e.Discovered, e.Configured)
}

// splitIssuer derives Keycloak's base URL and realm from
// https://<host>[/prefix]/realms/<realm>.
func splitIssuer(issuer string) (base, realm string, err error) {
	i := strings.LastIndex(issuer, "/realms/")
	if i < 0 || strings.HasSuffix(issuer, "/") || strings.Contains(issuer[i+len("/realms/"):], "/") || issuer[i+len("/realms/"):] == "" {
		return "", "", fmt.Errorf("issuer %q: want the form https://<idp-host>/realms/<realm>", issuer)
	}
	return issuer[:i], issuer[i+len("/realms/"):], nil
}

// Provider is one Keycloak realm, discovered in the background.
type Provider struct {
	cfg   Config
	log   *zap.Logger
	http  *http.Client
	base  string
	realm string
	kc    *gocloak.GoCloak
	keys  *keySet
	// extra are the providers of cfg.Additional (Bearer tokens only).
	extra []*Provider

	disc atomic.Pointer[discovery]

	mu      sync.Mutex
	lastErr error // of the last discovery attempt; nil once discovered
	jwksErr error

	// after waits between discovery attempts: time.After, or the test's
	// (discovery is real network I/O, outside any synctest bubble).
	after func(time.Duration) <-chan time.Time

	tlsWarned atomic.Bool
	// clientErr is set while the provider refuses this service's client
	// (a wrong secret); readiness reports it.
	clientErr atomic.Pointer[string]
}

// discovery is what the realm's openid-configuration said.
type discovery struct {
	endpoint      oauth2.Endpoint
	endSession    string
	introspection string
	revocation    string
	userinfo      string
	// grants are grant_types_supported (nil: not said).
	grants []string
	// scopes are scopes_supported (nil: not said).
	scopes   []string
	algs     []string
	verifier *oidc.IDTokenVerifier
}

var _ ports.IdentityProvider = (*Provider)(nil)

// Set provides the provider and the Bearer authenticator.
var Set = wire.NewSet(Open, NewAuthenticator, wire.Bind(new(ports.IdentityProvider), new(*Provider)))

// New builds the provider without contacting it; Start discovers it.
func New(cfg Config, log *zap.Logger) (*Provider, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("keycloak: %w", err)
	}
	base, realm, _ := splitIssuer(cfg.backChannel())
	p := &Provider{cfg: cfg, log: log.Named("keycloak"), base: base, realm: realm, after: time.After}
	roots, err := rootsWith(cfg.CAFiles)
	if err != nil {
		return nil, fmt.Errorf("keycloak: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	p.http = &http.Client{Timeout: cfg.HTTPTimeout, Transport: &trustTransport{next: tr, p: p}}
	if !cfg.Generic { // Keycloak's URL layout; a generic provider uses its discovery document
		p.kc = gocloak.NewClient(base)
		p.kc.SetRestyClient(resty.NewWithClient(p.http))
	}
	cache, err := jwks.New(jwks.Config{Client: p.http, Timeout: cfg.HTTPTimeout, MinRefetch: cfg.KeyRefetch, Now: cfg.Now, Fetched: func(err error) {
		telemetry.JWKSRefreshed(err)
		telemetry.IdPCalled(telemetry.IdPJWKS, outcomeOf(err))
	}})
	if err != nil {
		return nil, fmt.Errorf("keycloak: %w: %w", err, domain.ErrInvalidInput)
	}
	p.keys = &keySet{cache: cache}
	for _, t := range cfg.Additional {
		q, err := New(Config{Issuer: t.Issuer, DiscoveryURL: t.DiscoveryURL, ClientID: t.ClientID, CAFiles: append(slices.Clone(cfg.CAFiles), t.CAFiles...),
			RoleMap: cfg.RoleMap, RolesClaim: cfg.RolesClaim, SubjectClaim: cfg.SubjectClaim, Audience: cfg.Audience, GatewayResourceBase: cfg.GatewayResourceBase, Generic: cfg.Generic, Skew: cfg.Skew, HTTPTimeout: cfg.HTTPTimeout, KeyRefetch: cfg.KeyRefetch, CacheSize: cfg.CacheSize, Now: cfg.Now,
			bearerOnly: true}, log)
		if err != nil {
			return nil, fmt.Errorf("additional issuer %s: %w", t.Issuer, err)
		}
		p.extra = append(p.extra, q)
	}
	return p, nil
}

// Open builds the provider and tries discovery once: a discovery document
// naming another issuer stops the start (IssuerMismatchError); an
// unreachable provider does not, discovery is then retried in the
// background. The cleanup stops it.
func Open(cfg Config, log *zap.Logger) (*Provider, func(), error) {
	p, err := New(cfg, log)
	if err != nil {
		return nil, nil, err
	}
	var stops []func()
	stop := func() {
		for _, s := range stops {
			s()
		}
	}
	for _, q := range append([]*Provider{p}, p.extra...) {
		s, err := q.start()
		if err != nil {
			stop()
			return nil, nil, err
		}
		stops = append(stops, s)
	}
	return p, stop, nil
}

// start discovers once and, if that failed for any reason but an issuer
// mismatch, keeps trying in the background until the returned stop.
func (p *Provider) start() (func(), error) {
	first := p.Discover(context.Background())
	var mismatch *IssuerMismatchError
	if errors.As(first, &mismatch) {
		return nil, fmt.Errorf("keycloak: %w: %w", first, domain.ErrInvalidInput)
	}
	if first == nil {
		return func() {}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	return func() { cancel(); <-done }, nil
}

// rootsWith returns the system roots plus every certificate of files.
func rootsWith(files []string) (*x509.CertPool, error) {
	return tlsroots.SystemPlus("SERVICE_OIDC_CA_FILE / NODE_EXTRA_CA_CERTS", files...)
}

// trustTransport notices an untrusted provider certificate and logs it once,
// naming the settings that fix it.
type trustTransport struct {
	next http.RoundTripper
	p    *Provider
}

func (t *trustTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil && isUntrusted(err) {
		err = &untrustedError{err: err}
		if t.p.tlsWarned.CompareAndSwap(false, true) {
			t.p.log.Error("the identity provider's TLS certificate is not trusted: set SERVICE_OIDC_CA_FILE (or NODE_EXTRA_CA_CERTS) to the PEM file of the certificate authority that signed it",
				zap.String("host", r.URL.Host), zap.Error(err))
		}
	}
	return resp, err
}

type untrustedError struct{ err error }

func (e *untrustedError) Error() string {
	return "provider certificate not trusted (set SERVICE_OIDC_CA_FILE or NODE_EXTRA_CA_CERTS): " + e.err.Error()
}
func (e *untrustedError) Unwrap() error { return e.err }

func isUntrusted(err error) bool {
	var ua x509.UnknownAuthorityError
	var cv *tls.CertificateVerificationError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &ua) || errors.As(err, &cv) || errors.As(err, &hn) || errors.As(err, &ci)
}

// Discovery retry backoff: the first wait, doubling up to the last.
const (
	retryFirst = time.Second
	retryMax   = 30 * time.Second
)

// Run discovers the realm, retrying with backoff (1 s doubling to 30 s)
// until it succeeds or ctx ends. Logins answer 503 meanwhile.
func (p *Provider) Run(ctx context.Context) {
	delay := retryFirst
	for {
		err := p.Discover(ctx)
		if err == nil {
			return
		}
		p.log.Warn("OIDC discovery failed; retrying", zap.String("issuer", p.cfg.Issuer), zap.Duration("in", delay), zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-p.after(delay):
		}
		delay = min(delay*2, retryMax)
	}
}

// Discover reads the realm's openid-configuration once (from the
// discovery URL when set), checks that it names our issuer, and loads the
// JWKS. With a discovery URL, the endpoints the service calls itself are
// moved there; the browser's (authorization, end session) stay public.
func (p *Provider) Discover(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, p.http), p.cfg.HTTPTimeout)
	defer cancel()
	from := p.cfg.backChannel()
	docURL := strings.TrimSuffix(from, "/") + "/.well-known/openid-configuration"
	// The document's issuer is checked below, to name both values.
	op, err := oidc.NewProvider(oidc.InsecureIssuerURLContext(ctx, p.cfg.Issuer), from)
	telemetry.IdPCalled(telemetry.IdPDiscovery, outcomeOf(err))
	if err != nil {
		err = fmt.Errorf("discovery of %s: %w", docURL, err)
		p.setStatus(err, nil)
		return err
	}
	var meta struct {
		Issuer        string   `json:"issuer"`
		JWKSURI       string   `json:"jwks_uri"`
		EndSession    string   `json:"end_session_endpoint"`
		Introspection string   `json:"introspection_endpoint"`
		Revocation    string   `json:"revocation_endpoint"`
		Userinfo      string   `json:"userinfo_endpoint"`
		Algs          []string `json:"id_token_signing_alg_values_supported"`
		Grants        []string `json:"grant_types_supported"`
		Scopes        []string `json:"scopes_supported"`
	}
	if err := op.Claims(&meta); err != nil {
		err = fmt.Errorf("discovery document: %w", err)
		p.setStatus(err, nil)
		return err
	}
	if meta.Issuer != p.cfg.Issuer {
		err := &IssuerMismatchError{Configured: p.cfg.Issuer, Discovered: meta.Issuer, URL: docURL, Split: p.cfg.DiscoveryURL != ""}
		p.setStatus(err, nil)
		return err
	}
	meta.JWKSURI, meta.Introspection, meta.Revocation, meta.Userinfo = p.cfg.internal(meta.JWKSURI), p.cfg.internal(meta.Introspection), p.cfg.internal(meta.Revocation), p.cfg.internal(meta.Userinfo)
	endpoint := op.Endpoint()
	endpoint.TokenURL = p.cfg.internal(endpoint.TokenURL)
	algs := allowedAlgs(meta.Algs)
	if len(algs) == 0 {
		err := fmt.Errorf("discovery document advertises no asymmetric signing algorithm (got %q)", meta.Algs)
		p.setStatus(err, nil)
		return err
	}
	if p.cfg.IntrospectionURL != "" {
		meta.Introspection = p.cfg.IntrospectionURL
	}
	if meta.JWKSURI == "" {
		err := errors.New("discovery document has no jwks_uri")
		p.setStatus(err, nil)
		return err
	}
	p.keys.configure(meta.JWKSURI, algs)
	jwksErr := p.keys.cache.Refresh(ctx)
	if jwksErr != nil {
		p.setStatus(nil, jwksErr)
		return fmt.Errorf("jwks: %w", jwksErr)
	}
	d := &discovery{
		endpoint:      endpoint,
		endSession:    meta.EndSession,
		introspection: meta.Introspection,
		revocation:    meta.Revocation,
		userinfo:      meta.Userinfo,
		grants:        meta.Grants,
		scopes:        meta.Scopes,
		algs:          algs,
		verifier: oidc.NewVerifier(p.cfg.Issuer, p.keys, &oidc.Config{
			SupportedSigningAlgs: algs,
			// Audience, azp and lifetimes are checked by checkClaims with a
			// small skew; go-oidc's nbf leeway is five minutes.
			SkipClientIDCheck: true,
			SkipExpiryCheck:   true,
		}),
	}
	p.disc.Store(d)
	p.setStatus(nil, nil)
	p.log.Info("OIDC provider discovered", zap.String("issuer", p.cfg.Issuer), zap.String("from", docURL), zap.Strings("algorithms", algs))
	return nil
}

// allowedAlgs keeps the advertised algorithms that are on the allow-list;
// a provider that advertises none gets RS256, the one OIDC mandates.
func allowedAlgs(advertised []string) []string {
	if len(advertised) == 0 {
		return []string{"RS256"}
	}
	var out []string
	for _, a := range advertised {
		// Never "none", never an HMAC (whose key would be our client
		// secret).
		if slices.Contains(jwks.Algorithms, a) {
			out = append(out, a)
		}
	}
	return out
}

func (p *Provider) setStatus(discErr, jwksErr error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastErr, p.jwksErr = discErr, jwksErr
}

// Ready fails until discovery has succeeded: with domain.ErrUnavailable,
// or domain.ErrUnauthenticated when the provider's certificate is not
// trusted (the specification's 401 at login).
func (p *Provider) Ready() error {
	if p.disc.Load() != nil {
		return nil
	}
	p.mu.Lock()
	err := errors.Join(p.lastErr, p.jwksErr)
	p.mu.Unlock()
	var ue *untrustedError
	if errors.As(err, &ue) {
		return fmt.Errorf("keycloak: %w: %w", ue, domain.ErrUnauthenticated)
	}
	if err == nil {
		err = errors.New("discovery has not finished yet")
	}
	return fmt.Errorf("keycloak: OIDC provider not ready: %w: %w", err, domain.ErrUnavailable)
}

// Checks reports readiness per part for /health: "ok" or what is wrong.
func (p *Provider) Checks() map[string]string {
	client := "ok"
	if msg := p.clientErr.Load(); msg != nil {
		client = "failing: " + *msg
	}
	if p.disc.Load() != nil {
		return map[string]string{"oidc_discovery": "ok", "oidc_jwks": "ok", "oidc_client": client}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := map[string]string{"oidc_discovery": "pending", "oidc_jwks": "pending", "oidc_client": client}
	var ue *untrustedError
	if errors.As(p.lastErr, &ue) || errors.As(p.jwksErr, &ue) {
		c["oidc_tls"] = "provider certificate not trusted: set SERVICE_OIDC_CA_FILE or NODE_EXTRA_CA_CERTS"
	}
	if p.lastErr != nil {
		c["oidc_discovery"] = "failing: " + p.lastErr.Error()
	} else if p.jwksErr != nil {
		c["oidc_discovery"] = "ok"
		c["oidc_jwks"] = "failing: " + p.jwksErr.Error()
	}
	return c
}

// Issuer is the configured issuer.
func (p *Provider) Issuer() string { return p.cfg.Issuer }

// ClientID is the configured client id.
func (p *Provider) ClientID() string { return p.cfg.ClientID }

// Algorithms lists the accepted signature algorithms (empty before discovery).
func (p *Provider) Algorithms() []string {
	if d := p.disc.Load(); d != nil {
		return d.algs
	}
	return nil
}

// KeyIDs lists the key ids of the cached JWKS.
func (p *Provider) KeyIDs() []string { return p.keys.cache.KeyIDs() }
