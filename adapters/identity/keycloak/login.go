package keycloak

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/Nerzal/gocloak/v13"
	"github.com/coreos/go-oidc/v3/oidc"
	"go.uber.org/zap"
	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/adapters/telemetry"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// DefaultScopes are asked for in the code flow unless Config.Scopes says
// otherwise. Keycloak issues refresh tokens without offline_access (which
// means offline tokens there); most other providers only with it.
var DefaultScopes = []string{oidc.ScopeOpenID, "profile", "email"}

// scopes are the code flow's scopes: the configured ones, else the
// default, plus offline_access for a generic provider that lists it.
func (p *Provider) scopes(d *discovery) []string {
	if p.cfg.Scopes != nil {
		return p.cfg.Scopes
	}
	if p.cfg.Generic && slices.Contains(d.scopes, oidc.ScopeOfflineAccess) {
		return append(slices.Clip(DefaultScopes), oidc.ScopeOfflineAccess)
	}
	return DefaultScopes
}

func (p *Provider) oauth2Config(d *discovery) *oauth2.Config {
	return &oauth2.Config{
		ClientID:     p.cfg.ClientID,
		ClientSecret: p.cfg.ClientSecret,
		Endpoint:     d.endpoint,
		RedirectURL:  p.cfg.RedirectURI,
		Scopes:       p.scopes(d),
	}
}

// AuthCodeURL is the provider's authorization URL for req (code flow,
// PKCE S256, nonce).
func (p *Provider) AuthCodeURL(req ports.AuthRequest) (string, error) {
	d := p.disc.Load()
	if d == nil {
		return "", p.Ready()
	}
	return p.oauth2Config(d).AuthCodeURL(req.State, oidc.Nonce(req.Nonce), oauth2.S256ChallengeOption(req.CodeVerifier)), nil
}

// ExchangeCode redeems an authorization code with the client secret and the
// PKCE verifier, then verifies both tokens (the id token against req.Nonce).
func (p *Provider) ExchangeCode(ctx context.Context, code string, req ports.AuthRequest) (ports.TokenSet, error) {
	d := p.disc.Load()
	if d == nil {
		return ports.TokenSet{}, p.Ready()
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, p.http)
	tok, err := p.oauth2Config(d).Exchange(ctx, code, oauth2.VerifierOption(req.CodeVerifier))
	telemetry.IdPCalled(telemetry.IdPCodeExchange, outcomeOf(err))
	if err != nil {
		return ports.TokenSet{}, p.classify("code exchange", err)
	}
	p.clientAccepted()
	return p.tokenSetOf(ctx, tok, tok.RefreshToken, req.Nonce, true)
}

// refreshExpiresIn is Keycloak's refresh_expires_in of a token response
// (0: not said).
func refreshExpiresIn(tok *oauth2.Token) int {
	if v, ok := tok.Extra("refresh_expires_in").(float64); ok {
		return int(v)
	}
	return 0
}

// PasswordGrantOffered reports whether the discovery document lists the
// password grant. A generic provider's document that does not say offers
// only the default of OpenID Discovery (authorization code, implicit); a
// Keycloak realm that does not say is taken to offer it, as Keycloak does.
func (p *Provider) PasswordGrantOffered() bool {
	d := p.disc.Load()
	if d == nil {
		return false
	}
	if d.grants == nil {
		return !p.cfg.Generic
	}
	return slices.Contains(d.grants, "password")
}

// PasswordGrant logs in with username and password (ROPC, scope=openid),
// only at a provider that offers the password grant.
func (p *Provider) PasswordGrant(ctx context.Context, username, password string) (ports.TokenSet, error) {
	if err := p.Ready(); err != nil {
		return ports.TokenSet{}, err
	}
	if !p.PasswordGrantOffered() {
		return ports.TokenSet{}, fmt.Errorf("password login is not offered: the identity provider does not list the password grant "+
			"(grant_types_supported); sign in at GET /auth/login, and set auth.oidc.passwordLogin: false: %w", domain.ErrNotFound)
	}
	return p.grant(ctx, telemetry.IdPPasswordGrant, "password grant", "", func(c *oauth2.Config, ctx context.Context) (*oauth2.Token, error) {
		return c.PasswordCredentialsToken(ctx, username, password)
	})
}

// Refresh redeems a refresh token and verifies the new tokens; roles are
// extracted afresh, so a role removed at the provider is gone now.
func (p *Provider) Refresh(ctx context.Context, refreshToken string) (ports.TokenSet, error) {
	if refreshToken == "" {
		return ports.TokenSet{}, fmt.Errorf("keycloak: the provider issued no refresh token: the session cannot be renewed: %w", domain.ErrUnauthenticated)
	}
	if err := p.Ready(); err != nil {
		return ports.TokenSet{}, err
	}
	return p.grant(ctx, telemetry.IdPRefresh, "refresh", refreshToken, func(c *oauth2.Config, ctx context.Context) (*oauth2.Token, error) {
		return c.TokenSource(ctx, &oauth2.Token{RefreshToken: refreshToken}).Token()
	})
}

// Logout ends the provider session of refreshToken.
func (p *Provider) Logout(ctx context.Context, refreshToken string) error {
	if err := p.Ready(); err != nil {
		return err
	}
	if p.cfg.Generic {
		return p.genericRevoke(ctx, refreshToken)
	}
	err := p.kc.Logout(ctx, p.cfg.ClientID, p.cfg.ClientSecret, p.realm, refreshToken)
	telemetry.IdPCalled(telemetry.IdPLogout, outcomeOf(err))
	if err != nil {
		return p.classify("logout", err)
	}
	return nil
}

// Introspect asks the provider whether a token is active (agentauth oidc
// check uses it; request authentication never does).
func (p *Provider) Introspect(ctx context.Context, token string) (bool, error) {
	c, err := p.introspect(ctx, token)
	active, _ := c["active"].(bool)
	return active, err
}

// EndSessionURL is the provider's end-session URL for a browser.
func (p *Provider) EndSessionURL(idTokenHint string) string {
	d := p.disc.Load()
	if d == nil || d.endSession == "" {
		return ""
	}
	q := url.Values{"client_id": {p.cfg.ClientID}}
	if idTokenHint != "" {
		q.Set("id_token_hint", idTokenHint)
	}
	sep := "?"
	if strings.Contains(d.endSession, "?") {
		sep = "&"
	}
	return d.endSession + sep + q.Encode()
}

// personName is how the claims name the person (domain.PersonNameOf):
// preferred_username, else name, else email, each from the first claims
// holding it.
func personName(claims ...domain.Claims) string {
	for _, c := range [...]string{"preferred_username", "name", "email"} {
		if s := firstString(c, claims...); s != "" {
			return domain.PersonNameOf(s)
		}
	}
	return ""
}

func firstString(name string, claims ...domain.Claims) string {
	for _, c := range claims {
		if s, ok := c[name].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// outcomeOf names the kind of a provider call's error for the metrics (the
// same split as classify, with the kinds of unavailability apart).
func outcomeOf(err error) string {
	var ue *untrustedError
	var re *oauth2.RetrieveError
	var ae *gocloak.APIError
	var ne net.Error
	var oe *net.OpError
	switch {
	case err == nil:
		return telemetry.IdPOK
	case errors.As(err, &ue) || strings.Contains(err.Error(), "certificate"):
		return telemetry.IdPTLS
	case errors.As(err, &re) && re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500,
		errors.As(err, &ae) && ae.Code >= 400 && ae.Code < 500:
		return telemetry.IdPRefused
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return telemetry.IdPTimeout
	case errors.As(err, &oe):
		return telemetry.IdPUnreachable
	}
	return telemetry.IdPBadAnswer
}

// classify turns a provider error into a domain error: the provider
// refusing (4xx) is ErrUnauthenticated, an untrusted certificate too (the
// specification's 401 at login), anything else ErrUnavailable.
func (p *Provider) classify(op string, err error) error {
	var ue *untrustedError
	var re *oauth2.RetrieveError
	var ae *gocloak.APIError
	switch code, status := oauthErrorCode(err); faultOf(code, status) {
	case faultCredentials:
		return p.clientRefused(op, code)
	case faultConfig:
		p.clientAccepted() // refused for another reason than the client's credentials
		return p.configFault(op, code)
	}
	switch {
	case errors.As(err, &ue) || strings.Contains(err.Error(), "certificate"):
		return fmt.Errorf("keycloak: %s: provider certificate not trusted (SERVICE_OIDC_CA_FILE / NODE_EXTRA_CA_CERTS): %w", op, domain.ErrUnauthenticated)
	case errors.As(err, &re) && re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500:
		p.clientAccepted() // refused for the user's reason: the client itself passed
		return fmt.Errorf("keycloak: %s refused: %s: %w", op, re.ErrorCode, domain.ErrUnauthenticated)
	case errors.As(err, &ae) && ae.Code >= 400 && ae.Code < 500:
		p.clientAccepted()
		return fmt.Errorf("keycloak: %s refused (%d): %w", op, ae.Code, domain.ErrUnauthenticated)
	}
	p.log.Warn("identity provider call failed", zap.String("op", op), zap.Error(err))
	return fmt.Errorf("keycloak: %s: %w: %w", op, err, domain.ErrUnavailable)
}
