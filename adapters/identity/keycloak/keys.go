package keycloak

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentauth/agentauth/internal/jwks"
)

// keySet is the provider's JWKS (internal/jwks: rate-limited refetch on an
// unknown key id, a deadline per fetch, one fetch for concurrent callers)
// with the algorithms its discovery document allows; it is go-oidc's
// oidc.KeySet. When the JWKS endpoint is down the cached keys keep
// verifying.
type keySet struct {
	cache *jwks.Cache
	algs  atomic.Pointer[[]jose.SignatureAlgorithm]
}

func (k *keySet) configure(url string, algs []string) {
	allowed := make([]jose.SignatureAlgorithm, 0, len(algs))
	for _, a := range algs {
		allowed = append(allowed, jose.SignatureAlgorithm(a))
	}
	k.algs.Store(&allowed)
	k.cache.SetURL(url)
}

func (k *keySet) allowed() []jose.SignatureAlgorithm {
	if a := k.algs.Load(); a != nil {
		return *a
	}
	return nil
}

// VerifySignature implements oidc.KeySet.
func (k *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw, k.allowed())
	if err != nil {
		return nil, fmt.Errorf("malformed or disallowed JWS: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("want exactly one signature")
	}
	kid := jws.Signatures[0].Header.KeyID
	if payload, ok := verifyWith(jws, k.cache.Keys(kid)); ok {
		return payload, nil
	}
	// Unknown key id (or no key verified it): refetch, rate-limited. The
	// keys are tried again whatever the refetch says: a fetch by another
	// caller may have brought the key meanwhile.
	refetchErr := k.cache.Refetch(ctx)
	if payload, ok := verifyWith(jws, k.cache.Keys(kid)); ok {
		return payload, nil
	}
	if refetchErr != nil {
		return nil, fmt.Errorf("no cached key verifies the token and the JWKS could not be refetched: %w", refetchErr)
	}
	return nil, errors.New("no key of the provider's JWKS verifies the signature")
}

func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey) ([]byte, bool) {
	for i := range keys {
		if payload, err := jws.Verify(&keys[i]); err == nil {
			return payload, true
		}
	}
	return nil, false
}
