// Package upstreamauth speaks OAuth 2.0 with the authorization servers of
// servers' upstreams, for each person's own credential at the MCP gateway
// (ports.UpstreamAuthorizer): the authorization server's metadata (RFC
// 8414, else OpenID discovery; found from the upstream's RFC 9728
// protected-resource metadata when the registration names no issuer), the
// authorization-code flow with PKCE, refresh and token exchange (RFC 8693)
// through golang.org/x/oauth2, revocation (RFC 7009), and the id token's
// sub verified with go-oidc. It keeps no tokens; the documents it reads
// are kept a while.
package upstreamauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/ttlcache"
	"github.com/agentauth/agentauth/ports"
)

// Config is what the authorizer needs besides each registration.
type Config struct {
	// CredentialsDir holds the client secrets registrations name
	// (gateway.credentialsDir).
	CredentialsDir string
	// Issuer, ClientID and ClientSecret are agentauth's own OIDC client:
	// what a token_exchange registration that names none exchanges at and
	// as ("" without OIDC).
	Issuer, ClientID, ClientSecret string
	// Timeout bounds each exchange with an authorization server; 0: 15 s.
	Timeout time.Duration
	// KeepFor is how long a discovered document is kept; 0: 10 minutes.
	KeepFor time.Duration
}

// Authorizer is the ports.UpstreamAuthorizer.
type Authorizer struct {
	cfg  Config
	http *http.Client
	// meta are authorization servers' metadata by issuer, prm the
	// protected-resource metadata by endpoint.
	meta *ttlcache.Cache[string, metadata]
	prm  *ttlcache.Cache[string, resourceMetadata]
	mu   sync.Mutex
	keys map[string]*oidc.RemoteKeySet
	now  func() time.Time
}

var _ ports.UpstreamAuthorizer = (*Authorizer)(nil)

// New builds the authorizer.
func New(cfg Config) (*Authorizer, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.KeepFor <= 0 {
		cfg.KeepFor = 10 * time.Minute
	}
	meta, err := ttlcache.New[string, metadata](256)
	if err != nil {
		return nil, err
	}
	prm, err := ttlcache.New[string, resourceMetadata](256)
	if err != nil {
		return nil, err
	}
	// Redirects are not followed: a token request carries the client's
	// secret, and a discovery document is read where it must be.
	client := &http.Client{Timeout: cfg.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Authorizer{cfg: cfg, http: client, meta: meta, prm: prm, keys: map[string]*oidc.RemoteKeySet{}, now: time.Now}, nil
}

// metadata is what the gateway reads of an authorization server's
// metadata document.
type metadata struct {
	Issuer           string   `json:"issuer"`
	Authorization    string   `json:"authorization_endpoint"`
	Token            string   `json:"token_endpoint"`
	Revocation       string   `json:"revocation_endpoint"`
	JWKS             string   `json:"jwks_uri"`
	AuthMethods      []string `json:"token_endpoint_auth_methods_supported"`
	ChallengeMethods []string `json:"code_challenge_methods_supported"`
}

// resourceMetadata is what the gateway reads of RFC 9728 metadata.
type resourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
}

// unavailable wraps err as the authorization server being out of reach.
func unavailable(what string, err error) error {
	return fmt.Errorf("upstream authorization: %s: %w", what, errors.Join(err, domain.ErrUnavailable))
}

// Discover finds sv's authorization server and what to ask of it.
func (a *Authorizer) Discover(ctx context.Context, sv domain.Server) (ports.UpstreamAS, error) {
	u := sv.UpstreamAuth
	if u == nil {
		return ports.UpstreamAS{}, fmt.Errorf("server %s has no upstream_auth: %w", sv.Name, domain.ErrInvalidInput)
	}
	issuer, resource := u.Issuer, u.Resource
	if u.Type == domain.UpstreamOAuth2 && (issuer == "" || resource == "") {
		prm, err := a.resourceMetadata(ctx, sv.Endpoint)
		switch {
		case err != nil && issuer == "":
			return ports.UpstreamAS{}, fmt.Errorf("server %s: upstream_auth names no issuer and the endpoint's protected-resource metadata (RFC 9728) says none: %w", sv.Name, err)
		case err == nil && issuer == "":
			if len(prm.AuthorizationServers) == 0 {
				return ports.UpstreamAS{}, unavailable("server "+sv.Name, errors.New("the protected-resource metadata names no authorization server"))
			}
			issuer = prm.AuthorizationServers[0]
		}
		if err == nil && resource == "" {
			resource = prm.Resource
		}
	}
	as := ports.UpstreamAS{Issuer: issuer, ClientID: u.ClientID, Scopes: slices.Clone(u.Scopes), Resource: resource, Audience: u.Audience}
	if u.Type == domain.UpstreamTokenExchange && u.ClientID == "" {
		as.ClientID, as.ClientSecret = a.cfg.ClientID, a.cfg.ClientSecret
	}
	if as.Issuer == "" {
		as.Issuer = a.cfg.Issuer
	}
	if as.Issuer == "" || as.ClientID == "" {
		return ports.UpstreamAS{}, fmt.Errorf("server %s: upstream_auth type token_exchange names no issuer and client, and agentauth has no OIDC client "+
			"(auth.oidc) to exchange as: %w", sv.Name, domain.ErrInvalidInput)
	}
	if u.ClientSecret != "" {
		secret, err := a.secret(u.ClientSecret)
		if err != nil {
			return ports.UpstreamAS{}, err
		}
		as.ClientSecret = secret
	}
	m, err := a.metadata(ctx, as.Issuer)
	if err != nil {
		return ports.UpstreamAS{}, err
	}
	as.AuthURL, as.TokenURL, as.RevocationURL, as.JWKSURL = m.Authorization, m.Token, m.Revocation, m.JWKS
	if u.Type == domain.UpstreamOAuth2 && len(m.ChallengeMethods) > 0 && !slices.Contains(m.ChallengeMethods, "S256") {
		return ports.UpstreamAS{}, unavailable("issuer "+as.Issuer, errors.New("its metadata offers no PKCE S256 (code_challenge_methods_supported)"))
	}
	as.PostAuth = as.ClientSecret != "" && len(m.AuthMethods) > 0 && !slices.Contains(m.AuthMethods, "client_secret_basic") &&
		slices.Contains(m.AuthMethods, "client_secret_post")
	return as, nil
}

// secret reads a client secret from its file in the credentials folder.
func (a *Authorizer) secret(name string) (string, error) {
	if a.cfg.CredentialsDir == "" {
		return "", fmt.Errorf("upstream_auth client_secret %s: gateway.credentialsDir is not set: %w", name, domain.ErrInvalidInput)
	}
	if err := domain.ValidateCredentialName(name); err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(a.cfg.CredentialsDir, name))
	if err != nil {
		return "", fmt.Errorf("upstream_auth client_secret %s: %w", name, errors.Join(err, domain.ErrUnavailable))
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("upstream_auth client_secret %s: the file is empty: %w", name, domain.ErrUnavailable)
	}
	return s, nil
}

// wellKnown inserts a well-known name between a URL's host and its path
// (RFC 8414 §3.1, RFC 9728 §3.1), the path's terminating "/" removed.
func wellKnown(raw, name string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http(s) URL: %w", raw, domain.ErrInvalidInput)
	}
	u.Path = "/.well-known/" + name + strings.TrimSuffix(u.Path, "/")
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u.String(), nil
}

// resourceMetadata reads the endpoint's protected-resource metadata.
func (a *Authorizer) resourceMetadata(ctx context.Context, endpoint string) (resourceMetadata, error) {
	if m, ok := a.prm.Get(endpoint, a.now()); ok {
		return m, nil
	}
	at, err := wellKnown(endpoint, "oauth-protected-resource")
	if err != nil {
		return resourceMetadata{}, err
	}
	var m resourceMetadata
	if err := a.getJSON(ctx, at, &m); err != nil {
		return resourceMetadata{}, err
	}
	// RFC 9728 §3.3: the document must be the resource's own.
	want, err1 := domain.CanonicalResource(endpoint)
	got, err2 := domain.CanonicalResource(m.Resource)
	if err1 != nil || err2 != nil || got != want {
		return resourceMetadata{}, unavailable(at, fmt.Errorf("the metadata names resource %q, not %q", m.Resource, endpoint))
	}
	a.prm.Put(endpoint, m, a.now().Add(a.cfg.KeepFor))
	return m, nil
}

// metadata reads an issuer's metadata: RFC 8414's document, else OpenID
// discovery's (path inserted, then appended), whose issuer must be it.
func (a *Authorizer) metadata(ctx context.Context, issuer string) (metadata, error) {
	if m, ok := a.meta.Get(issuer, a.now()); ok {
		return m, nil
	}
	var urls []string
	for _, name := range []string{"oauth-authorization-server", "openid-configuration"} {
		u, err := wellKnown(issuer, name)
		if err != nil {
			return metadata{}, err
		}
		urls = append(urls, u)
	}
	urls = append(urls, strings.TrimSuffix(issuer, "/")+"/.well-known/openid-configuration")
	var errs []error
	for _, at := range slices.Compact(urls) {
		var m metadata
		err := a.getJSON(ctx, at, &m)
		switch {
		case err != nil:
			errs = append(errs, err)
			continue
		case m.Issuer != issuer:
			errs = append(errs, fmt.Errorf("%s names issuer %q, not %q", at, m.Issuer, issuer))
			continue
		case m.Token == "":
			errs = append(errs, fmt.Errorf("%s names no token_endpoint", at))
			continue
		}
		a.meta.Put(issuer, m, a.now().Add(a.cfg.KeepFor))
		return m, nil
	}
	return metadata{}, unavailable("discover issuer "+issuer, errors.Join(errs...))
}

// maxDocument bounds a metadata document.
const maxDocument = 1 << 20

// getJSON reads a JSON document.
func (a *Authorizer) getJSON(ctx context.Context, at string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, at, nil)
	if err != nil {
		return unavailable(at, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		return unavailable(at, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return unavailable(at, fmt.Errorf("HTTP %d", resp.StatusCode))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDocument)).Decode(v); err != nil {
		return unavailable(at, err)
	}
	return nil
}

// config is x/oauth2's configuration of as.
func config(as ports.UpstreamAS, redirectURI string) *oauth2.Config {
	style := oauth2.AuthStyleInHeader
	if as.ClientSecret == "" || as.PostAuth {
		style = oauth2.AuthStyleInParams
	}
	return &oauth2.Config{ClientID: as.ClientID, ClientSecret: as.ClientSecret, RedirectURL: redirectURI, Scopes: as.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: as.AuthURL, TokenURL: as.TokenURL, AuthStyle: style}}
}

// AuthCodeURL is the connect request: code flow, PKCE S256, state, and
// the RFC 8707 resource when there is one.
func (a *Authorizer) AuthCodeURL(as ports.UpstreamAS, state, verifier, redirectURI string) string {
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	if as.Resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", as.Resource))
	}
	return config(as, redirectURI).AuthCodeURL(state, opts...)
}

// ctx gives x/oauth2 the authorizer's HTTP client.
func (a *Authorizer) ctx(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, a.http)
}

// ExchangeCode redeems a code with its verifier (and the resource asked).
func (a *Authorizer) ExchangeCode(ctx context.Context, as ports.UpstreamAS, code, verifier, redirectURI string) (ports.UpstreamTokens, error) {
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(verifier)}
	if as.Resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", as.Resource))
	}
	tok, err := config(as, redirectURI).Exchange(a.ctx(ctx), code, opts...)
	if err != nil {
		return ports.UpstreamTokens{}, classify("code exchange", err)
	}
	return a.tokens(ctx, as, tok)
}

// Refresh uses a refresh token.
func (a *Authorizer) Refresh(ctx context.Context, as ports.UpstreamAS, refreshToken string) (ports.UpstreamTokens, error) {
	tok, err := config(as, "").TokenSource(a.ctx(ctx), &oauth2.Token{RefreshToken: refreshToken}).Token()
	if err != nil {
		return ports.UpstreamTokens{}, classify("refresh", err)
	}
	return a.tokens(ctx, as, tok)
}

// Token-exchange names (RFC 8693 §2.1, §3).
const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccess    = "urn:ietf:params:oauth:token-type:access_token"
)

// Exchange asks for a token issued to as.Audience on behalf of the
// subject token's person: x/oauth2's client-credentials request with its
// grant type set to token exchange (its EndpointParams may name it).
func (a *Authorizer) Exchange(ctx context.Context, as ports.UpstreamAS, subjectToken string) (ports.UpstreamTokens, error) {
	params := url.Values{"grant_type": {grantTokenExchange}, "subject_token": {subjectToken}, "subject_token_type": {tokenTypeAccess},
		"requested_token_type": {tokenTypeAccess}}
	if as.Audience != "" {
		params.Set("audience", as.Audience)
	}
	if as.Resource != "" {
		params.Set("resource", as.Resource)
	}
	c := config(as, "")
	cc := clientcredentials.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret, TokenURL: c.Endpoint.TokenURL, Scopes: c.Scopes,
		EndpointParams: params, AuthStyle: c.Endpoint.AuthStyle}
	tok, err := cc.Token(a.ctx(ctx))
	if err != nil {
		return ports.UpstreamTokens{}, classify("token exchange", err)
	}
	if tt, _ := tok.Extra("issued_token_type").(string); tt != "" && tt != tokenTypeAccess {
		return ports.UpstreamTokens{}, unavailable("token exchange", fmt.Errorf("issued a %s, not an access token", tt))
	}
	return ports.UpstreamTokens{AccessToken: tok.AccessToken, Expiry: tok.Expiry, Scopes: scopesOf(tok, as.Scopes)}, nil
}

// Revoke revokes token at the revocation endpoint (RFC 7009).
func (a *Authorizer) Revoke(ctx context.Context, as ports.UpstreamAS, token, hint string) (bool, error) {
	if as.RevocationURL == "" {
		return false, nil
	}
	form := url.Values{"token": {token}}
	if hint != "" {
		form.Set("token_type_hint", hint)
	}
	if as.ClientSecret == "" || as.PostAuth {
		form.Set("client_id", as.ClientID)
		if as.ClientSecret != "" {
			form.Set("client_secret", as.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, as.RevocationURL, strings.NewReader(form.Encode()))
	if err != nil {
		return false, unavailable("revocation", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if as.ClientSecret != "" && !as.PostAuth {
		// RFC 6749 §2.3.1: each part form-encoded, as x/oauth2 sends it.
		req.SetBasicAuth(url.QueryEscape(as.ClientID), url.QueryEscape(as.ClientSecret))
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return false, unavailable("revocation", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return true, nil
	}
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&e) == nil && e.Error != "" {
		return false, &ports.UpstreamRefusal{Code: e.Error, Description: e.Description, Status: resp.StatusCode}
	}
	return false, unavailable("revocation", fmt.Errorf("HTTP %d", resp.StatusCode))
}

// tokens reads a token response, the id token's sub verified.
func (a *Authorizer) tokens(ctx context.Context, as ports.UpstreamAS, tok *oauth2.Token) (ports.UpstreamTokens, error) {
	out := ports.UpstreamTokens{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry, Scopes: scopesOf(tok, as.Scopes)}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" || as.JWKSURL == "" {
		return out, nil
	}
	id, err := oidc.NewVerifier(as.Issuer, a.keySet(as.JWKSURL), &oidc.Config{ClientID: as.ClientID, SupportedSigningAlgs: signingAlgs}).Verify(ctx, raw)
	if err != nil {
		return ports.UpstreamTokens{}, fmt.Errorf("upstream authorization: the id token does not verify: %v: %w", err, domain.ErrUnauthenticated)
	}
	out.Subject = id.Subject
	return out, nil
}

// signingAlgs are the id tokens' algorithms taken: the asymmetric ones
// go-oidc verifies (never HS*, never none).
var signingAlgs = []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA}

// keySet is the key set at jwksURL, one per URL (go-oidc keeps and
// refetches its keys).
func (a *Authorizer) keySet(jwksURL string) *oidc.RemoteKeySet {
	a.mu.Lock()
	defer a.mu.Unlock()
	ks, ok := a.keys[jwksURL]
	if !ok {
		ks = oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), a.http), jwksURL)
		a.keys[jwksURL] = ks
	}
	return ks
}

// scopesOf is the scope the answer granted, else those asked (RFC 6749
// §5.1: the answer may leave it out when it is what was asked).
func scopesOf(tok *oauth2.Token, asked []string) []string {
	if s, _ := tok.Extra("scope").(string); s != "" {
		return strings.Fields(s)
	}
	return slices.Clone(asked)
}

// classify turns x/oauth2's error into a refusal (an OAuth error answer)
// or the authorization server being out of reach.
func classify(what string, err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode != "" {
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		return &ports.UpstreamRefusal{Code: re.ErrorCode, Description: re.ErrorDescription, Status: status}
	}
	if errors.As(err, &re) && re.Response != nil {
		return unavailable(what, fmt.Errorf("HTTP %d", re.Response.StatusCode))
	}
	return unavailable(what, err)
}
