package keycloak

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/adapters/telemetry"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// roles extracts the roles of a login or Bearer token: from
// auth.oidc.rolesClaim when set, else by Keycloak's rules.
func (p *Provider) roles(idToken, accessToken domain.Claims) domain.RoleExtraction {
	if p.cfg.RolesClaim != "" {
		return domain.ExtractRolesAt(idToken, accessToken, p.cfg.RolesClaim, p.cfg.RoleMap)
	}
	return domain.ExtractRoles(idToken, accessToken, p.cfg.ClientID, p.cfg.RoleMap)
}

// genericGrant asks a generic provider's token endpoint (from discovery)
// for tokens through golang.org/x/oauth2 and verifies them. refreshToken,
// when not empty, is kept if the provider does not rotate it.
func (p *Provider) genericGrant(ctx context.Context, call, op, refreshToken string,
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
	idToken, _ := tok.Extra("id_token").(string)
	var refreshIn int
	if v, ok := tok.Extra("refresh_expires_in").(float64); ok {
		refreshIn = int(v)
	}
	rt := tok.RefreshToken
	if rt == "" {
		rt = refreshToken
	}
	return p.tokenSet(ctx, tok.AccessToken, idToken, rt, refreshIn, "", refreshToken == "")
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
		return nil, &oauth2.RetrieveError{Response: resp, Body: body}
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

// genericIntrospect asks a generic provider's introspection endpoint
// (RFC 7662).
func (p *Provider) genericIntrospect(ctx context.Context, token string) (bool, error) {
	d := p.disc.Load()
	if d == nil {
		return false, p.Ready()
	}
	if d.introspection == "" {
		return false, fmt.Errorf("keycloak: the provider advertises no introspection endpoint: %w", domain.ErrUnavailable)
	}
	body, err := p.clientPost(ctx, d.introspection, url.Values{"token": {token}})
	telemetry.IdPCalled(telemetry.IdPIntrospection, outcomeOf(err))
	if err != nil {
		return false, p.classify("introspection", err)
	}
	var res struct {
		Active bool `json:"active"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		return false, fmt.Errorf("keycloak: introspection answer: %w: %w", err, domain.ErrUnavailable)
	}
	return res.Active, nil
}
