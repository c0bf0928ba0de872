package keycloak

import (
	"fmt"

	"github.com/agentauth/agentauth/domain"
)

// Reason codes of refused provider tokens: each names the rule that
// failed. They go into the error body, the audit record and the access
// log (reason).
const (
	ReasonMalformed       = "oidc_token_malformed"        // not a JWS, several signatures, an algorithm not allowed
	ReasonSignature       = "oidc_token_signature"        // no key of the provider verifies it
	ReasonIssuer          = "oidc_token_issuer"           // iss is not the configured issuer
	ReasonUntrustedIssuer = "oidc_token_issuer_untrusted" // a Bearer token of an issuer not configured
	ReasonNoSubject       = "oidc_token_subject"          // no sub (or auth.oidc.subjectClaim) claim
	ReasonExpired         = "oidc_token_expired"
	ReasonNotYetValid     = "oidc_token_not_yet_valid" // nbf or iat in the future
	ReasonType            = "oidc_token_type"          // typ says it is another kind of token
	ReasonIDTokenAsBearer = "oidc_id_token_as_bearer"  // an id token presented as an access token
	ReasonAudience        = "oidc_token_audience"      // neither aud, azp nor client_id names the client
	ReasonNonce           = "oidc_nonce"               // the id token's nonce is not the login's
	ReasonATHash          = "oidc_at_hash"             // the id token's at_hash does not match the access token
	ReasonSubject         = "oidc_subject_mismatch"    // id token, access token or userinfo name different subjects
	ReasonNoIDToken       = "oidc_id_token_missing"
	ReasonOpaque          = "oidc_token_opaque" // an opaque token and no introspection endpoint
	ReasonInactive        = "oidc_token_inactive"
)

// refuse is a token refusal with its reason code (a 401).
func refuse(code, format string, args ...any) error {
	return domain.RefuseToken(code, domain.ErrUnauthenticated, format, args...)
}

// refuseAs prefixes a refusal with the kind of token it concerns.
func refuseAs(kind tokenKind, err error) error {
	return fmt.Errorf("keycloak: %s: %w", kind, err)
}
