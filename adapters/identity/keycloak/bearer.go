package keycloak

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/ttlcache"
	"github.com/agentauth/agentauth/ports"
)

// Authenticator accepts Bearer access tokens of the realm issued to our
// client, and of each additional issuer issued to its client id, or
// issued for a gateway resource only (domain.Principal.ResourceOnly): a token
// is verified by exactly the issuer its iss claim names (that issuer's
// keys, iss, audience), and a token naming an issuer not configured is
// refused. Verified tokens are cached under their SHA-256 until they expire
// (internal/ttlcache, least recently used out first when full), so a token
// seen before costs a hash and a map look-up; failures are
// never cached, and the provider is never called for a token whose key is
// in the cached JWKS.
type Authenticator struct {
	p        *Provider
	byIssuer map[string]*Provider
	cache    *ttlcache.Cache[[sha256.Size]byte, domain.Principal]
	// refused remembers opaque tokens the provider called inactive, for a
	// short while, so that a client repeating one does not make a call to
	// the provider per request.
	refused *ttlcache.Cache[[sha256.Size]byte, domain.Principal]
	// flight makes concurrent first requests with one opaque token share
	// one introspection call.
	flight singleflight.Group
	// noCache turns the cache off (benchmarks).
	noCache bool
}

// Bounds of the introspection caches: an active opaque token is reused
// until its exp and at most IntrospectionCacheMax (a token the provider
// revokes stays accepted that long), an inactive one is refused without
// asking again for refusedFor.
const (
	IntrospectionCacheMax = 2 * time.Minute
	refusedFor            = 30 * time.Second
)

var _ ports.Authenticator = (*Authenticator)(nil)

// NewAuthenticator builds the Bearer authenticator of p.
func NewAuthenticator(p *Provider) *Authenticator {
	byIssuer := map[string]*Provider{p.cfg.Issuer: p}
	for _, q := range p.extra {
		byIssuer[q.cfg.Issuer] = q
	}
	return &Authenticator{p: p, byIssuer: byIssuer, cache: newTokenCache(p.cfg.CacheSize), refused: newTokenCache(p.cfg.CacheSize)}
}

// newTokenCache returns a cache of verified tokens (a least-recently-used
// map, each token until its own expiry). New has checked that size is
// positive, the one thing ttlcache.New refuses.
func newTokenCache(size int) *ttlcache.Cache[[sha256.Size]byte, domain.Principal] {
	c, err := ttlcache.New[[sha256.Size]byte, domain.Principal](size)
	if err != nil {
		panic("keycloak: a Provider not built by New: " + err.Error())
	}
	return c
}

// Authenticate verifies a Bearer access token and returns its principal
// with the roles of the access token (step 2 of role extraction: a Bearer
// request carries no id_token).
func (a *Authenticator) Authenticate(ctx context.Context, cred ports.Credential) (domain.Principal, error) {
	if cred.Kind != ports.CredentialBearer || cred.Value == "" {
		return domain.Principal{}, fmt.Errorf("keycloak: want a Bearer access token: %w", domain.ErrUnauthenticated)
	}
	now := a.p.cfg.Now()
	key := cred.Digest()
	if !a.noCache {
		if p, ok := a.cache.Get(key, now); ok {
			return p, nil
		}
	}
	if a.p.cfg.Generic && !domain.LooksLikeJWT(cred.Value) {
		return a.introspected(ctx, key, cred.Value, now)
	}
	q := a.p
	if iss, ok := unverifiedIssuer(cred.Value); ok && len(a.byIssuer) > 1 {
		if q, ok = a.byIssuer[iss]; !ok {
			return domain.Principal{}, fmt.Errorf("keycloak: access_token: %w",
				refuse(ReasonUntrustedIssuer, "issuer %q is not trusted (auth.oidc.issuer, auth.oidc.additionalIssuers)", iss))
		}
	}
	v, err := q.verify(ctx, cred.Value, kindBearer, "")
	if err != nil {
		return domain.Principal{}, err
	}
	ex := q.roles([]domain.ClaimSource{{Token: domain.TokenAccess, Claims: v.claims}})
	subject, err := q.subjectOf(v.claims)
	if err != nil {
		return domain.Principal{}, fmt.Errorf("keycloak: access_token: %w", err)
	}
	p := domain.Principal{Subject: subject, Name: personName(v.claims), Roles: ex.Roles, Method: domain.MethodOIDC, RoleSource: ex.Source, Audience: audience(v.claims["aud"]),
		ResourceOnly: v.resourceOnly}
	if q == a.p {
		// Back-channel logouts come from the primary issuer only.
		p.SessionID, _ = v.claims["sid"].(string)
	}
	if !a.noCache {
		a.cache.Put(key, p, v.expiry.Add(a.p.cfg.Skew))
	}
	return p, nil
}

// introspected authenticates an opaque access token of a generic
// provider through its introspection endpoint (RFC 7662): asked once per
// token however many requests carry it at once, the answer reused until
// the token's exp and at most IntrospectionCacheMax.
func (a *Authenticator) introspected(ctx context.Context, key [sha256.Size]byte, token string, now time.Time) (domain.Principal, error) {
	if _, ok := a.refused.Get(key, now); ok {
		return domain.Principal{}, fmt.Errorf("keycloak: access_token: %w", refuse(ReasonInactive, "the provider says the token is not active"))
	}
	v, err, _ := a.flight.Do(string(key[:]), func() (any, error) {
		claims, err := a.p.introspect(context.WithoutCancel(ctx), token)
		if err != nil {
			return nil, err
		}
		p, exp, err := a.p.introspectedPrincipal(claims)
		if errors.Is(err, domain.ErrUnauthenticated) {
			a.refused.Put(key, domain.Principal{}, now.Add(refusedFor))
		}
		if err != nil {
			return nil, err
		}
		a.cache.Put(key, p, exp) // exp is bounded by IntrospectionCacheMax
		return p, nil
	})
	if err != nil {
		return domain.Principal{}, err
	}
	return v.(domain.Principal), nil
}

// unverifiedIssuer reads the iss claim of a JWS without verifying it, only
// to pick the issuer that must verify it.
func unverifiedIssuer(raw string) (string, bool) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return "", false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", false
	}
	var c struct {
		Iss string `json:"iss"`
	}
	if json.Unmarshal(payload, &c) != nil || c.Iss == "" {
		return "", false
	}
	return c.Iss, true
}
