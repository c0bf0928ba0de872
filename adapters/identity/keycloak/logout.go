package keycloak

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// LogoutTokenMaxAge is how long after its iat a back-channel logout token
// is accepted (plus the clock skew). The provider sends it the moment the
// session ends; a token older than this is a replay or a stale retry.
const LogoutTokenMaxAge = 2 * time.Minute

// backchannelLogoutEvent is the member of the events claim that makes a
// JWT a logout token (OpenID Connect Back-Channel Logout 1.0, section 2.4).
const backchannelLogoutEvent = "http://schemas.openid.net/event/backchannel-logout"

// maxLogoutToken bounds the size of a logout token we parse.
const maxLogoutToken = 16 << 10

// VerifyLogoutToken implements ports.IdentityProvider: the signature with
// the provider's keys (allow-listed asymmetric algorithms), then
// checkLogoutClaims. Replay (jti) is the caller's: it needs the store.
func (p *Provider) VerifyLogoutToken(ctx context.Context, raw string) (ports.LogoutToken, error) {
	fail := func(err error) (ports.LogoutToken, error) {
		return ports.LogoutToken{}, fmt.Errorf("keycloak: logout token: %w: %w", err, domain.ErrInvalidInput)
	}
	if raw == "" {
		return fail(errors.New("empty"))
	}
	if len(raw) > maxLogoutToken {
		return fail(fmt.Errorf("longer than %d bytes", maxLogoutToken))
	}
	claims, headerTyp, _, err := p.verifySignature(ctx, raw)
	if errors.Is(err, domain.ErrUnavailable) {
		return ports.LogoutToken{}, err
	}
	if err != nil {
		// Only the message: a refused logout token is a 400, not the
		// 401 of a refused access token.
		return fail(errors.New(err.Error()))
	}
	lt, err := p.checkLogoutClaims(claims, headerTyp)
	if err != nil {
		return fail(err)
	}
	return lt, nil
}

// checkLogoutClaims checks a logout token's claims (section 2.6 of the
// specification): iss, aud naming our client, a fresh iat, exp when
// present, a jti, the back-channel logout event, sid and/or sub, and no
// nonce (which an id token would carry). Pure, so it is tested claim by
// claim.
func (p *Provider) checkLogoutClaims(c domain.Claims, headerTyp string) (ports.LogoutToken, error) {
	now, skew := p.cfg.Now(), p.cfg.Skew
	if iss, _ := c["iss"].(string); iss != p.cfg.Issuer {
		return ports.LogoutToken{}, fmt.Errorf("issuer %q is not %q", iss, p.cfg.Issuer)
	}
	if isATJWT(headerTyp) {
		return ports.LogoutToken{}, errors.New("an access token is not a logout token")
	}
	// Keycloak marks its logout tokens with typ "Logout"; an id token says "ID".
	if typ, ok := c["typ"]; ok && typ != "Logout" {
		return ports.LogoutToken{}, fmt.Errorf("typ %q is not a logout token", typ)
	}
	if aud := audience(c["aud"]); !contains(aud, p.cfg.ClientID) {
		return ports.LogoutToken{}, fmt.Errorf("audience %q does not name client %q", aud, p.cfg.ClientID)
	}
	iat, ok := numericDate(c["iat"])
	if !ok {
		return ports.LogoutToken{}, errors.New("no valid iat claim")
	}
	if now.Add(skew).Before(iat) {
		return ports.LogoutToken{}, errors.New("issued in the future (iat)")
	}
	until := iat.Add(LogoutTokenMaxAge + skew)
	if !now.Before(until) {
		return ports.LogoutToken{}, fmt.Errorf("issued at %s, more than %s ago", iat.UTC().Format(time.RFC3339), LogoutTokenMaxAge)
	}
	if raw, present := c["exp"]; present {
		exp, ok := numericDate(raw)
		if !ok || !now.Before(exp.Add(skew)) {
			return ports.LogoutToken{}, errors.New("expired (exp)")
		}
	}
	jti, _ := c["jti"].(string)
	if strings.TrimSpace(jti) == "" {
		return ports.LogoutToken{}, errors.New("no jti claim")
	}
	events, _ := c["events"].(map[string]any)
	if _, ok := events[backchannelLogoutEvent].(map[string]any); !ok {
		return ports.LogoutToken{}, fmt.Errorf("the events claim does not hold %s", backchannelLogoutEvent)
	}
	if _, present := c["nonce"]; present {
		return ports.LogoutToken{}, errors.New("a nonce claim (an id token is not a logout token)")
	}
	sid, _ := c["sid"].(string)
	sub, _ := c["sub"].(string)
	if sid == "" && sub == "" {
		return ports.LogoutToken{}, errors.New("neither sid nor sub")
	}
	return ports.LogoutToken{ID: jti, SessionID: sid, Subject: sub, AcceptedUntil: until}, nil
}
