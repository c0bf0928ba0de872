package rest

import (
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/domain"
)

// gatewayOnly is the one rule for a resource-only principal, a provider
// token issued for gateway resources alone (RFC 8707,
// domain.Principal.ResourceOnly): it opens /mcp/{server} of a server its
// audience names, and nothing else (the API, the console, another
// server's gateway endpoint, the public listener). It runs right after
// authentication on every listener that authenticates, before any
// route's own check; the refusal is a 403 with
// domain.ReasonTokenGatewayOnly, audited as a denial.
func (s *Server) gatewayOnly(c *fiber.Ctx) error {
	st := stateOf(c)
	if !st.principal.ResourceOnly {
		return c.Next()
	}
	if s.gatewayOn() {
		server, ok := strings.CutPrefix(c.Path(), "/mcp/")
		if ok && st.principal.NamesGatewayServer(s.uc.MCP.ResourceBase(), server) {
			return c.Next()
		}
	}
	refused(c)
	return &domain.Refusal{Code: domain.ReasonTokenGatewayOnly,
		Message: fmt.Sprintf("the access token was issued for gateway resources only (aud %q): it opens their /mcp/{server} endpoints and nothing else; "+
			"for this request, use a token issued to agentauth's client", st.principal.Audience)}
}
