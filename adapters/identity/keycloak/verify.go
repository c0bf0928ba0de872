package keycloak

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentauth/agentauth/domain"
)

// tokenKind is the role a token must have.
type tokenKind int

const (
	kindAccess tokenKind = iota
	kindID
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
}

// verify checks raw as a token of kind: signature (allow-listed
// asymmetric algorithms, provider's keys), iss, then checkClaims. nonce is
// checked on id tokens when not empty.
func (p *Provider) verify(ctx context.Context, raw string, kind tokenKind, nonce string) (verified, error) {
	fail := func(err error) (verified, error) {
		return verified{}, fmt.Errorf("keycloak: %s: %w: %w", kind, err, domain.ErrUnauthenticated)
	}
	claims, headerTyp, err := p.verifySignature(ctx, raw)
	if errors.Is(err, domain.ErrUnavailable) {
		return verified{}, err
	}
	if err != nil {
		return fail(err)
	}
	v, err := p.checkClaims(claims, headerTyp, kind, nonce)
	if err != nil {
		return fail(err)
	}
	return v, nil
}

// verifySignature checks that raw is a JWS with one signature by one of
// the provider's keys in an allow-listed asymmetric algorithm and that it
// names our issuer, and returns its claims and header typ. Before
// discovery it fails with Ready's error.
func (p *Provider) verifySignature(ctx context.Context, raw string) (domain.Claims, string, error) {
	if strings.Count(raw, ".") != 2 {
		return nil, "", errors.New("not a signed JWT")
	}
	d := p.disc.Load()
	if d == nil {
		return nil, "", p.Ready()
	}
	jws, err := jose.ParseSigned(raw, p.keys.allowed())
	if err != nil {
		return nil, "", fmt.Errorf("malformed or disallowed algorithm: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, "", errors.New("want exactly one signature")
	}
	headerTyp, _ := jws.Signatures[0].Protected.ExtraHeaders[jose.HeaderType].(string)
	if _, err := d.verifier.Verify(ctx, raw); err != nil { // signature and iss
		return nil, "", err
	}
	// The payload was verified above; decode it once more as a generic map
	// (go-oidc keeps only its own fields).
	var claims domain.Claims
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &claims); err != nil {
		return nil, "", fmt.Errorf("claims: %w", err)
	}
	return claims, headerTyp, nil
}

// checkClaims checks everything but the signature; it is pure so that it
// can be tested claim by claim.
func (p *Provider) checkClaims(c domain.Claims, headerTyp string, kind tokenKind, nonce string) (verified, error) {
	now := p.cfg.Now()
	skew := p.cfg.Skew
	if iss, _ := c["iss"].(string); iss != p.cfg.Issuer {
		return verified{}, fmt.Errorf("issuer %q is not %q", iss, p.cfg.Issuer)
	}
	sub, _ := c["sub"].(string)
	if sub == "" {
		return verified{}, errors.New("no sub claim")
	}
	exp, ok := numericDate(c["exp"])
	if !ok {
		return verified{}, errors.New("no valid exp claim")
	}
	if !now.Before(exp.Add(skew)) {
		return verified{}, fmt.Errorf("expired at %s", exp.UTC().Format(time.RFC3339))
	}
	if raw, present := c["nbf"]; present {
		nbf, ok := numericDate(raw)
		if !ok || now.Add(skew).Before(nbf) {
			return verified{}, errors.New("not valid yet (nbf)")
		}
	}
	if raw, present := c["iat"]; present {
		iat, ok := numericDate(raw)
		if !ok || now.Add(skew).Before(iat) {
			return verified{}, errors.New("issued in the future (iat)")
		}
	}
	aud := audience(c["aud"])
	azp, _ := c["azp"].(string)
	typ, hasTyp := c["typ"].(string)
	switch kind {
	case kindAccess:
		// Keycloak marks its tokens with a typ claim ("Bearer", "ID",
		// "Refresh"); RFC 9068 providers with the at+jwt header type.
		switch {
		case hasTyp && !strings.EqualFold(typ, "Bearer"):
			return verified{}, fmt.Errorf("typ %q is not an access token", typ)
		case !hasTyp && !isATJWT(headerTyp):
			return verified{}, fmt.Errorf("neither a typ claim nor an at+jwt header (header typ %q): not an access token", headerTyp)
		}
		if azp != p.cfg.ClientID && !contains(aud, p.cfg.ClientID) {
			return verified{}, fmt.Errorf("issued to %q (aud %q), not to client %q", azp, aud, p.cfg.ClientID)
		}
	case kindID:
		if hasTyp && typ != "ID" {
			return verified{}, fmt.Errorf("typ %q is not an id token", typ)
		}
		if isATJWT(headerTyp) {
			return verified{}, errors.New("an access token is not an id token")
		}
		if !contains(aud, p.cfg.ClientID) {
			return verified{}, fmt.Errorf("audience %q does not name client %q", aud, p.cfg.ClientID)
		}
		if len(aud) > 1 && azp != p.cfg.ClientID {
			return verified{}, fmt.Errorf("several audiences and azp %q is not client %q", azp, p.cfg.ClientID)
		}
		if nonce != "" {
			got, _ := c["nonce"].(string)
			if subtle.ConstantTimeCompare([]byte(got), []byte(nonce)) != 1 {
				return verified{}, errors.New("nonce does not match the login request")
			}
		}
	}
	return verified{claims: c, subject: sub, expiry: exp}, nil
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
