package keycloak

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentauth/agentauth/domain"
)

// tokenKind is the role a token must have.
type tokenKind int

const (
	kindAccess tokenKind = iota
	kindID
	// kindBearer is an access token presented as a Bearer credential: it
	// may also be one for gateway resources only (verified.resourceOnly).
	kindBearer
)

func (k tokenKind) String() string {
	if k == kindID {
		return domain.TokenID
	}
	return domain.TokenAccess
}

// verified is a token whose signature and claims were checked.
type verified struct {
	claims  domain.Claims
	subject string
	expiry  time.Time
	// resourceOnly: a Bearer token admitted because its audience names a
	// gateway resource, not because it was issued to this client.
	resourceOnly bool
	// id is go-oidc's view of the token, for at_hash (id tokens).
	id *oidc.IDToken
}

// verify checks raw as a token of kind: signature (allow-listed
// asymmetric algorithms, provider's keys), iss, then checkClaims. nonce is
// checked on id tokens when not empty. Refusals carry a reason code.
func (p *Provider) verify(ctx context.Context, raw string, kind tokenKind, nonce string) (verified, error) {
	claims, headerTyp, id, err := p.verifySignature(ctx, raw)
	if errors.Is(err, domain.ErrUnavailable) {
		return verified{}, err
	}
	if err != nil {
		return verified{}, refuseAs(kind, err)
	}
	v, err := p.checkClaims(claims, headerTyp, kind, nonce)
	if err != nil {
		return verified{}, refuseAs(kind, err)
	}
	v.id = id
	return v, nil
}

// verifySignature checks that raw is a JWS with one signature by one of
// the provider's keys in an allow-listed asymmetric algorithm and that it
// names our issuer, and returns its claims and header typ. Before
// discovery it fails with Ready's error.
func (p *Provider) verifySignature(ctx context.Context, raw string) (domain.Claims, string, *oidc.IDToken, error) {
	if strings.Count(raw, ".") != 2 {
		return nil, "", nil, refuse(ReasonMalformed, "not a signed JWT")
	}
	d := p.disc.Load()
	if d == nil {
		return nil, "", nil, p.Ready()
	}
	jws, err := jose.ParseSigned(raw, p.keys.allowed())
	if err != nil {
		return nil, "", nil, refuse(ReasonMalformed, "malformed or disallowed algorithm: %v", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, "", nil, refuse(ReasonMalformed, "want exactly one signature")
	}
	headerTyp, _ := jws.Signatures[0].Protected.ExtraHeaders[jose.HeaderType].(string)
	id, err := d.verifier.Verify(ctx, raw) // signature and iss
	if errors.Is(err, domain.ErrUnavailable) {
		return nil, "", nil, err
	}
	if err != nil {
		if strings.Contains(err.Error(), "issued by a different provider") {
			return nil, "", nil, refuse(ReasonIssuer, "%v", err)
		}
		return nil, "", nil, refuse(ReasonSignature, "%v", err)
	}
	// The payload was verified above; decode it once more as a generic map
	// (go-oidc keeps only its own fields).
	var claims domain.Claims
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &claims); err != nil {
		return nil, "", nil, refuse(ReasonMalformed, "claims: %v", err)
	}
	return claims, headerTyp, id, nil
}

// checkClaims checks everything but the signature; it is pure so that it
// can be tested claim by claim.
func (p *Provider) checkClaims(c domain.Claims, headerTyp string, kind tokenKind, nonce string) (verified, error) {
	now := p.cfg.Now()
	skew := p.cfg.Skew
	if iss, _ := c["iss"].(string); iss != p.cfg.Issuer {
		return verified{}, refuse(ReasonIssuer, "issuer %q is not %q", iss, p.cfg.Issuer)
	}
	sub, _ := c["sub"].(string)
	if sub == "" {
		return verified{}, refuse(ReasonNoSubject, "no sub claim")
	}
	exp, ok := numericDate(c["exp"])
	if !ok {
		return verified{}, refuse(ReasonExpired, "no valid exp claim")
	}
	if !now.Before(exp.Add(skew)) {
		return verified{}, refuse(ReasonExpired, "expired at %s", exp.UTC().Format(time.RFC3339))
	}
	if raw, present := c["nbf"]; present {
		nbf, ok := numericDate(raw)
		if !ok || now.Add(skew).Before(nbf) {
			return verified{}, refuse(ReasonNotYetValid, "not valid yet (nbf)")
		}
	}
	if raw, present := c["iat"]; present {
		iat, ok := numericDate(raw)
		if !ok || now.Add(skew).Before(iat) {
			return verified{}, refuse(ReasonNotYetValid, "issued in the future (iat)")
		}
	}
	aud := audience(c["aud"])
	azp, _ := c["azp"].(string)
	typ, hasTyp := c["typ"].(string)
	v := verified{claims: c, subject: sub, expiry: exp}
	switch kind {
	case kindAccess, kindBearer:
		if err := p.accessTokenType(c, typ, hasTyp, headerTyp); err != nil {
			return verified{}, err
		}
		clientID, _ := c["client_id"].(string) // RFC 9068
		var err error
		if v.resourceOnly, err = p.admit(aud, azp, clientID, kind == kindBearer); err != nil {
			return verified{}, err
		}
	case kindID:
		if hasTyp && typ != "ID" {
			return verified{}, refuse(ReasonType, "typ %q is not an id token", typ)
		}
		if isATJWT(headerTyp) {
			return verified{}, refuse(ReasonType, "an access token is not an id token")
		}
		if !contains(aud, p.cfg.ClientID) {
			return verified{}, refuse(ReasonAudience, "audience %q does not name client %q", aud, p.cfg.ClientID)
		}
		if len(aud) > 1 && azp != p.cfg.ClientID {
			return verified{}, refuse(ReasonAudience, "several audiences and azp %q is not client %q", azp, p.cfg.ClientID)
		}
		if nonce != "" {
			got, _ := c["nonce"].(string)
			if subtle.ConstantTimeCompare([]byte(got), []byte(nonce)) != 1 {
				return verified{}, refuse(ReasonNonce, "nonce does not match the login request")
			}
		}
	}
	return v, nil
}

// admit decides whether an access token is meant for this service: issued
// to the client (azp, client_id or aud) or naming the configured
// audience. Else, for a Bearer credential (gateway), an aud value naming
// a gateway resource (RFC 8707) admits it as resource-only; a login's
// tokens must be the client's.
func (p *Provider) admit(aud []string, azp, clientID string, gateway bool) (resourceOnly bool, err error) {
	if azp == p.cfg.ClientID || clientID == p.cfg.ClientID || contains(aud, p.cfg.ClientID) || p.cfg.Audience != "" && contains(aud, p.cfg.Audience) {
		return false, nil
	}
	if gateway && p.cfg.GatewayResourceBase != "" {
		for _, a := range aud {
			if _, ok := domain.GatewayServerOf(p.cfg.GatewayResourceBase, a); ok {
				return true, nil
			}
		}
	}
	note := p.audienceNote()
	if gateway && p.cfg.GatewayResourceBase != "" {
		note += " or a gateway resource " + strings.TrimSuffix(p.cfg.GatewayResourceBase, "/") + "/mcp/{server}"
	}
	return false, refuse(ReasonAudience, "issued to %q (aud %q, client_id %q), not to client %q%s", azp, aud, clientID, p.cfg.ClientID, note)
}

func (p *Provider) audienceNote() string {
	if p.cfg.Audience == "" {
		return ""
	}
	return " or audience " + strconv.Quote(p.cfg.Audience)
}

// accessTokenType tells an access token from other JWTs of the provider.
//
// A typ claim, as Keycloak marks its tokens ("Bearer", "ID", "Refresh"),
// decides when present. Without one, Keycloak mode wants the RFC 9068
// header typ at+jwt; generic mode also accepts header typ JWT or none,
// what most providers send (Hydra, Auth0, Okta, Entra), but refuses a
// token that carries what only id tokens carry (nonce, at_hash, c_hash)
// unless its header says at+jwt: an id token of our client names the
// client in aud and would pass every other check.
func (p *Provider) accessTokenType(c domain.Claims, typ string, hasTyp bool, headerTyp string) error {
	switch {
	case hasTyp && strings.EqualFold(typ, "Bearer"):
		return nil
	case hasTyp && typ == "ID":
		return refuse(ReasonIDTokenAsBearer, "typ %q: an id token is not an access token", typ)
	case hasTyp:
		return refuse(ReasonType, "typ %q is not an access token", typ)
	case isATJWT(headerTyp):
		return nil
	case !p.cfg.Generic:
		return refuse(ReasonType, "neither a typ claim nor an at+jwt header (header typ %q): not an access token", headerTyp)
	case headerTyp != "" && !strings.EqualFold(headerTyp, "JWT"):
		return refuse(ReasonType, "header typ %q is not at+jwt, JWT or absent: not an access token", headerTyp)
	}
	for _, claim := range []string{"nonce", "at_hash", "c_hash"} {
		if _, ok := c[claim]; ok {
			return refuse(ReasonIDTokenAsBearer, "it carries %s, which only id tokens carry: an id token is not an access token", claim)
		}
	}
	return nil
}

func isATJWT(typ string) bool {
	return strings.EqualFold(typ, "at+jwt") || strings.EqualFold(typ, "application/at+jwt")
}

// numericDate reads a JWT NumericDate (seconds since the epoch).
func numericDate(v any) (time.Time, bool) {
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e11 {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true
}

// audience reads aud, a string or an array of strings.
func audience(v any) []string {
	switch a := v.(type) {
	case string:
		return []string{a}
	case []any:
		out := make([]string, 0, len(a))
		for _, e := range a {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
