package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-jose/go-jose/v4"
	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/agentverify"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
)

// AgentTokens serves agent credentials: minting tokens for a session's
// agents, and the key set and metadata tool servers verify them with.
// Config.AgentTokens nil leaves them out.
type AgentTokens struct {
	Tokens *app.AgentTokens
	Keys   KeySet
}

// KeySet is the signer's public side.
type KeySet interface {
	Issuer() string
	JWKS() jose.JSONWebKeySet
}

// Paths of the key set and the RFC 8414 metadata, on the API port (any
// authenticated caller) and on the management listener (no credential).
const (
	jwksPath     = "/.well-known/jwks.json"
	metadataPath = "/.well-known/oauth-authorization-server"
)

// tokenTypeJWT is RFC 8693's issued_token_type of a JWT.
const tokenTypeJWT = "urn:ietf:params:oauth:token-type:jwt"

func (s *Server) agentTokenRoutes() []route {
	if s.cfg.AgentTokens == nil {
		return nil
	}
	return []route{
		{fiber.MethodPost, "/api/v2/sessions/:id/agents/:agent/token", domain.PermAgentsToken, s.mintAgentToken},
		// Any authenticated caller: every built-in role holds me:read.
		{fiber.MethodGet, jwksPath, domain.PermMeRead, s.serveJWKS},
		{fiber.MethodGet, metadataPath, domain.PermMeRead, s.serveMetadata},
	}
}

type mintRequest struct {
	Audience string   `json:"audience"`
	Tools    []string `json:"tools"`
	TTL      string   `json:"ttl"`
}

type tokenResponse struct {
	AccessToken     string `json:"access_token"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int64  `json:"expires_in"`
	IssuedTokenType string `json:"issued_token_type"`
}

func (s *Server) mintAgentToken(c *fiber.Ctx) error {
	var req mintRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	m, err := s.cfg.AgentTokens.Tokens.Mint(c.UserContext(), principalOf(c), c.Params("id"), c.Params("agent"), app.MintRequest(req))
	if err != nil {
		return tokenRefused(c, err)
	}
	note(c, "agent token minted: "+m.Grant.Describe())
	return s.sendToken(c, m)
}

// tokenRefused marks a refused token request as a denial in the audit
// log, whatever its status (an unknown audience is a 404, a ttl over the
// maximum a 400); the record's reason carries the reason code.
func tokenRefused(c *fiber.Ctx, err error) error {
	var tr *domain.TokenRefusal
	if errors.As(err, &tr) {
		refused(c)
	}
	return err
}

// Token exchange (RFC 8693) at the token endpoint.
const (
	grantTokenExchange  = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccess     = "urn:ietf:params:oauth:token-type:access_token"
	tokenEndpoint       = "/oauth2/token"
	maxExchangeFormTool = 256
)

// tokenEndpoints registers the token endpoint: public in the sense that it
// takes no other credential, because the subject_token (the parent agent's
// token) is the credential; audited like every request.
func (s *Server) tokenEndpoints() {
	if s.cfg.AgentTokens == nil {
		return
	}
	s.app.Post(tokenEndpoint, s.public, s.exchangeToken)
}

// exchangeToken answers a token exchange with a token for a new sub-agent.
func (s *Server) exchangeToken(c *fiber.Ctx) error {
	if gt := c.FormValue("grant_type"); gt != grantTokenExchange {
		refused(c)
		return domain.RefuseToken(domain.ReasonTokenGrantType, domain.ErrInvalidInput, "grant_type must be %s", grantTokenExchange)
	}
	if tt := c.FormValue("subject_token_type"); tt != tokenTypeJWT && tt != tokenTypeAccess {
		refused(c)
		return domain.RefuseToken(agentverify.ReasonMalformed, domain.ErrInvalidInput, "subject_token_type must be %s", tokenTypeJWT)
	}
	req := app.ExchangeRequest{SubjectToken: c.FormValue("subject_token"), Audience: c.FormValue("audience"), TTL: c.FormValue("ttl")}
	// The tools asked for: scope (RFC 8693 §2.1, space-separated) or tools.
	if scope := c.FormValue("scope") + " " + c.FormValue("tools"); strings.TrimSpace(scope) != "" {
		req.Tools = strings.FieldsFunc(scope, func(r rune) bool { return r == ' ' || r == ',' })
		if len(req.Tools) > maxExchangeFormTool {
			return fmt.Errorf("at most %d tools: %w", maxExchangeFormTool, domain.ErrInvalidInput)
		}
	}
	x, err := s.cfg.AgentTokens.Tokens.Exchange(c.UserContext(), req)
	if x.Parent.Subject != "" {
		// The audit record names whom the chain acts for.
		stateOf(c).principal = domain.Principal{Subject: x.Parent.Subject, Method: domain.MethodAgentToken}
	}
	if err != nil {
		if x.Parent.ID != "" {
			note(c, "agent token exchange refused; parent: "+x.Parent.Describe())
		}
		return tokenRefused(c, err)
	}
	note(c, "agent token exchanged: "+x.Grant.Describe()+"; parent jti "+x.Parent.ID)
	return s.sendToken(c, x.Minted)
}

// sendToken answers a token: never cached (no-store is on every answer).
func (s *Server) sendToken(c *fiber.Ctx, m app.Minted) error {
	c.Set(fiber.HeaderPragma, "no-cache")
	return c.JSON(tokenResponse{AccessToken: m.Token, TokenType: "Bearer",
		ExpiresIn: int64(m.Grant.Expires.Sub(m.Grant.IssuedAt).Seconds()), IssuedTokenType: tokenTypeJWT})
}

func (s *Server) serveJWKS(c *fiber.Ctx) error { return c.JSON(s.cfg.AgentTokens.Keys.JWKS()) }

func (s *Server) serveMetadata(c *fiber.Ctx) error { return c.JSON(s.metadata()) }

// metadata is the RFC 8414 document of what exists.
func (s *Server) metadata() map[string]any {
	iss := s.cfg.AgentTokens.Keys.Issuer()
	base := strings.TrimSuffix(iss, "/")
	return map[string]any{
		"issuer":                                iss,
		"jwks_uri":                              base + jwksPath,
		"token_endpoint":                        base + tokenEndpoint,
		"grant_types_supported":                 []string{grantTokenExchange},
		"id_token_signing_alg_values_supported": []string{string(jose.EdDSA)},
		"response_types_supported":              []string{},
	}
}

// managementKeys adds the key set and metadata to the management
// listener's mux, without credential.
func (s *Server) managementKeys(mux *http.ServeMux) {
	if s.cfg.AgentTokens == nil {
		return
	}
	serve := func(v func() any) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(v())
		}
	}
	mux.Handle("GET "+jwksPath, serve(func() any { return s.cfg.AgentTokens.Keys.JWKS() }))
	mux.Handle("GET "+metadataPath, serve(func() any { return s.metadata() }))
}
