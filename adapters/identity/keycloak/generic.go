package keycloak

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/adapters/telemetry"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// roles extracts the roles from the first source holding any: at
// auth.oidc.rolesClaim when set, else by Keycloak's rules.
func (p *Provider) roles(sources []domain.ClaimSource) domain.RoleExtraction {
	return domain.ExtractRolesFrom(sources, p.cfg.RolesClaim, p.cfg.ClientID, p.cfg.RoleMap)
}

// grant asks the provider's token endpoint (from discovery) for tokens
// through golang.org/x/oauth2 and verifies them. refreshToken, when not
// empty, is kept if the provider does not rotate it.
func (p *Provider) grant(ctx context.Context, call, op, refreshToken string,
	grant func(*oauth2.Config, context.Context) (*oauth2.Token, error)) (ports.TokenSet, error) {
	d := p.disc.Load()
	if d == nil {
		return ports.TokenSet{}, p.Ready()
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, p.http)
	tok, err := grant(p.oauth2Config(d), ctx)
	telemetry.IdPCalled(call, outcomeOf(err))
	if err != nil {
		return ports.TokenSet{}, p.classify(op, err)
	}
	p.clientAccepted()
	rt := tok.RefreshToken
	if rt == "" {
		rt = refreshToken
	}
	return p.tokenSetOf(ctx, tok, rt, "", refreshToken == "")
}

// tokenSetOf verifies a token response as OpenID Connect Core says a
// client must: the id token (signature, iss, aud, azp, exp, nonce, and
// at_hash when present; required at login, needID). Roles come from the id
// token, else the userinfo endpoint (asked here, at login and refresh,
// never per request), else the access token.
//
// Keycloak's specialisation: its access token is a JWT of this client and
// must verify (a generic provider's may be opaque, and is used only when it
// is a JWT that verifies as an access token of this client), userinfo is
// never needed, and the access token's own exp is its expiry.
func (p *Provider) tokenSetOf(ctx context.Context, tok *oauth2.Token, refresh, nonce string, needID bool) (ports.TokenSet, error) {
	var at verified
	if !p.cfg.Generic {
		var err error
		if at, err = p.verify(ctx, tok.AccessToken, kindAccess, ""); err != nil {
			return ports.TokenSet{}, err
		}
	} else if strings.Count(tok.AccessToken, ".") == 2 {
		v, err := p.verify(ctx, tok.AccessToken, kindAccess, "")
		switch {
		case errors.Is(err, domain.ErrUnavailable):
			return ports.TokenSet{}, err
		case err == nil:
			at = v
		default: // a JWT for another audience, or of another format: opaque to this client
			p.log.Debug("access token not used for roles", zap.String("reason", refusalCode(err)))
		}
	}
	idRaw, _ := tok.Extra("id_token").(string)
	var id verified
	switch {
	case idRaw != "":
		var err error
		if id, err = p.verify(ctx, idRaw, kindID, nonce); err != nil {
			return ports.TokenSet{}, err
		}
		if id.id.AccessTokenHash != "" {
			if err := id.id.VerifyAccessToken(tok.AccessToken); err != nil {
				return ports.TokenSet{}, refuseAs(kindID, refuse(ReasonATHash, "at_hash does not match the access token"))
			}
		}
	case needID:
		return ports.TokenSet{}, fmt.Errorf("keycloak: %w", refuse(ReasonNoIDToken, "the token response has no id_token (is scope openid allowed for the client?)"))
	}
	subject := cmp.Or(id.subject, at.subject)
	if id.subject != "" && at.subject != "" && id.subject != at.subject {
		return ports.TokenSet{}, fmt.Errorf("keycloak: %w", refuse(ReasonSubject, "id token and access token name different subjects"))
	}
	sources := []domain.ClaimSource{{Token: domain.TokenID, Claims: id.claims}}
	var userinfo domain.Claims
	if p.cfg.Generic && len(p.roles(sources).Findings) == 0 {
		var err error
		if userinfo, err = p.userinfo(ctx, tok.AccessToken); err != nil {
			return ports.TokenSet{}, err
		}
		if sub, _ := userinfo["sub"].(string); userinfo != nil && (subject == "" && sub == "" || subject != "" && sub != subject) {
			// OpenID Connect Core 5.3.2: the answer is not to be used.
			return ports.TokenSet{}, fmt.Errorf("keycloak: %w", refuse(ReasonSubject, "the userinfo answer names subject %q, the tokens %q", sub, subject))
		}
		if subject == "" {
			subject, _ = userinfo["sub"].(string)
		}
	}
	if subject == "" {
		return ports.TokenSet{}, fmt.Errorf("keycloak: %w", refuse(ReasonNoSubject, "the token response names no subject: no id token, no JWT access token and no userinfo endpoint"))
	}
	sources = append(sources, domain.ClaimSource{Token: domain.TokenUserinfo, Claims: userinfo}, domain.ClaimSource{Token: domain.TokenAccess, Claims: at.claims})
	if p.cfg.SubjectClaim != "" {
		var err error
		if subject, err = p.subjectOf(id.claims, userinfo, at.claims); err != nil {
			return ports.TokenSet{}, fmt.Errorf("keycloak: %w", err)
		}
	}
	ts := ports.TokenSet{
		Subject:      subject,
		Username:     personName(id.claims, userinfo, at.claims),
		Roles:        p.roles(sources),
		AccessToken:  tok.AccessToken,
		RefreshToken: refresh,
		IDToken:      idRaw,
		AccessExpiry: tok.Expiry,
		SessionID:    firstString("sid", id.claims, at.claims),
	}
	if !p.cfg.Generic || ts.AccessExpiry.IsZero() { // Keycloak's, or no expires_in: the JWT's own, else the id token's
		ts.AccessExpiry = cmp.Or(at.expiry, id.expiry)
	}
	if in := refreshExpiresIn(tok); in > 0 {
		ts.RefreshExpiry = p.cfg.Now().Add(time.Duration(in) * time.Second)
	}
	return ts, nil
}

// userinfo asks the provider's userinfo endpoint with the access token;
// nil when the provider has none. A signed answer (application/jwt) is
// verified like a token.
func (p *Provider) userinfo(ctx context.Context, accessToken string) (domain.Claims, error) {
	d := p.disc.Load()
	if d == nil || d.userinfo == "" {
		return nil, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.userinfo, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	resp, err := p.http.Do(req)
	telemetry.IdPCalled(telemetry.IdPUserinfo, outcomeOf(err))
	if err != nil {
		return nil, p.classify("userinfo", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		p.log.Warn("the userinfo endpoint did not answer", zap.Int("status", resp.StatusCode), zap.Error(err))
		return nil, fmt.Errorf("keycloak: userinfo answered %d: %w", resp.StatusCode, domain.ErrUnavailable)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/jwt" {
		claims, _, _, err := p.verifySignature(ctx, strings.TrimSpace(string(body)))
		if err != nil {
			return nil, fmt.Errorf("keycloak: userinfo: %w", err)
		}
		return claims, nil
	}
	var claims domain.Claims
	if err := json.Unmarshal(body, &claims); err != nil {
		return nil, fmt.Errorf("keycloak: userinfo answer: %w: %w", err, domain.ErrUnavailable)
	}
	return claims, nil
}

// subjectOf is the principal's subject: auth.oidc.subjectClaim (default
// sub) of the first claims holding it as a non-empty string.
func (p *Provider) subjectOf(claims ...domain.Claims) (string, error) {
	name := cmp.Or(p.cfg.SubjectClaim, "sub")
	if s := firstString(name, claims...); s != "" {
		return s, nil
	}
	return "", refuse(ReasonNoSubject, "no %s claim (auth.oidc.subjectClaim)", name)
}

// refusalCode is the reason code of a token refusal, "" for other errors.
func refusalCode(err error) string {
	var r *domain.TokenRefusal
	if errors.As(err, &r) {
		return r.Code
	}
	return ""
}

// clientPost posts form to a provider endpoint with the client's
// credentials (HTTP Basic, RFC 6749 section 2.3.1) and returns the body of
// a 2xx answer.
func (p *Provider) clientPost(ctx context.Context, endpoint string, form url.Values) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(p.cfg.ClientID), url.QueryEscape(p.cfg.ClientSecret))
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		// The OAuth error (RFC 6749 section 5.2, RFC 7662 section 2.3), so
		// that a refused client is told from a refused token.
		var e struct {
			Code        string `json:"error"`
			Description string `json:"error_description"`
		}
		_ = json.Unmarshal(body, &e)
		return nil, &oauth2.RetrieveError{Response: resp, Body: body, ErrorCode: e.Code, ErrorDescription: e.Description}
	}
	return body, nil
}

// genericRevoke ends a generic provider's session of a refresh token by
// revoking it (RFC 7009) when the provider advertises a revocation
// endpoint; without one there is nothing to call (the browser's
// end-session URL remains).
func (p *Provider) genericRevoke(ctx context.Context, refreshToken string) error {
	d := p.disc.Load()
	if d == nil || d.revocation == "" {
		return nil
	}
	_, err := p.clientPost(ctx, d.revocation, url.Values{"token": {refreshToken}, "token_type_hint": {"refresh_token"}})
	telemetry.IdPCalled(telemetry.IdPLogout, outcomeOf(err))
	if err != nil {
		return p.classify("logout (revocation)", err)
	}
	return nil
}

// introspect asks the provider's introspection endpoint (RFC 7662) about
// token, as this client, and returns its answer.
func (p *Provider) introspect(ctx context.Context, token string) (domain.Claims, error) {
	d := p.disc.Load()
	if d == nil {
		return nil, p.Ready()
	}
	if d.introspection == "" {
		return nil, fmt.Errorf("keycloak: access_token: %w", refuse(ReasonOpaque, "not a JWT, and the provider advertises no introspection endpoint to ask"))
	}
	body, err := p.clientPost(ctx, d.introspection, url.Values{"token": {token}, "token_type_hint": {"access_token"}})
	telemetry.IdPCalled(telemetry.IdPIntrospection, outcomeOf(err))
	if err != nil {
		return nil, p.classify("introspection", err)
	}
	var claims domain.Claims
	if err := json.Unmarshal(body, &claims); err != nil {
		return nil, fmt.Errorf("keycloak: introspection answer: %w: %w", err, domain.ErrUnavailable)
	}
	return claims, nil
}

// introspectedPrincipal checks an introspection answer as a Bearer
// token's claims: active, not expired, of our issuer when it says one,
// naming a subject, and admitted as a Bearer token's audience (admit). It returns the principal and until when the
// answer holds (its exp, else now plus IntrospectionCacheMax).
func (p *Provider) introspectedPrincipal(c domain.Claims) (domain.Principal, time.Time, error) {
	fail := func(code, format string, args ...any) (domain.Principal, time.Time, error) {
		return domain.Principal{}, time.Time{}, fmt.Errorf("keycloak: access_token (introspected): %w", refuse(code, format, args...))
	}
	now := p.cfg.Now()
	if active, _ := c["active"].(bool); !active {
		return fail(ReasonInactive, "the provider says the token is not active")
	}
	until := now.Add(IntrospectionCacheMax)
	if raw, ok := c["exp"]; ok {
		exp, ok := numericDate(raw)
		if !ok || !now.Before(exp.Add(p.cfg.Skew)) {
			return fail(ReasonExpired, "expired")
		}
		if e := exp.Add(p.cfg.Skew); e.Before(until) {
			until = e
		}
	}
	if iss, ok := c["iss"].(string); ok && iss != p.cfg.Issuer {
		return fail(ReasonIssuer, "issuer %q is not %q", iss, p.cfg.Issuer)
	}
	if sub, _ := c["sub"].(string); sub == "" {
		return fail(ReasonNoSubject, "the introspection answer names no subject")
	}
	sub, err := p.subjectOf(c)
	if err != nil {
		return domain.Principal{}, time.Time{}, fmt.Errorf("keycloak: access_token (introspected): %w", err)
	}
	aud := audience(c["aud"])
	clientID, _ := c["client_id"].(string)
	azp, _ := c["azp"].(string)
	resourceOnly, err := p.admit(aud, azp, clientID, true)
	if err != nil {
		return domain.Principal{}, time.Time{}, fmt.Errorf("keycloak: access_token (introspected): %w", err)
	}
	ex := p.roles([]domain.ClaimSource{{Token: domain.TokenIntrospection, Claims: c}})
	sid, _ := c["sid"].(string)
	return domain.Principal{Subject: sub, Name: personName(c), Roles: ex.Roles, Method: domain.MethodOIDC, RoleSource: ex.Source, SessionID: sid, Audience: aud,
		ResourceOnly: resourceOnly}, until, nil
}
