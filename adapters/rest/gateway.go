package rest

import (
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
	"github.com/agentauth/agentauth/ports"
)

// Gateway is the edge of the MCP gateway: /mcp/{server} on the API port
// and the protected-resource metadata of each server. It reads each HTTP
// request into an app.MCPRequest and writes the app.MCPAnswer of the
// Application's MCP flow (app.MCPGateway), which decides, forwards and
// holds; Config.Gateway nil, or an Application without MCP, leaves it out.
type Gateway struct {
	// MetadataURL is the public URL of the listener serving the
	// protected-resource metadata without credentials; "" names none.
	MetadataURL          string
	AuthorizationServers []string
}

const mcpPath = "/mcp/:server"

// Headers by which a caller other than an agent token names the agent of
// a session it acts for (an agent token names its own).
const (
	HeaderGatewaySession = "X-Agentauth-Session"
	HeaderGatewayAgent   = "X-Agentauth-Agent"
)

// gatewayOn reports whether the gateway is served.
func (s *Server) gatewayOn() bool { return s.cfg.Gateway != nil && s.uc.MCP != nil }

// gatewayRoutes registers the gateway, after authentication.
func (s *Server) gatewayRoutes() {
	if !s.gatewayOn() {
		return
	}
	s.app.Post(mcpPath, s.requireGateway, s.mcpPost)
	s.app.Get(mcpPath, s.requireGateway, s.mcpGet)
	s.app.Delete(mcpPath, s.requireGateway, s.mcpDelete)
}

// requireGateway authorizes the caller: an agent token (decided for its
// agent, as POST …/tool-calls decides it), or any other credential whose
// roles (and key's scope) hold toolcalls:write and that names the agent
// it acts for (HeaderGatewaySession, HeaderGatewayAgent). Which server
// the credential is for is checked once the server is known.
func (s *Server) requireGateway(c *fiber.Ctx) error {
	st := stateOf(c)
	if st.agent != nil {
		st.decision, st.decided = domain.Decision{Allowed: true, Permission: domain.PermToolCallsWrite, Role: roleAgentToken}, true
		return c.Next()
	}
	st.decision, st.decided = s.uc.Authorizer.Allow(st.principal, domain.PermToolCallsWrite), true
	if !st.decision.Allowed {
		return &domain.AccessDenied{Decision: st.decision}
	}
	if c.Get(HeaderGatewaySession) == "" || c.Get(HeaderGatewayAgent) == "" {
		refused(c)
		return &domain.Refusal{Code: domain.ReasonGatewayAgentNamed, Missing: domain.PermToolCallsWrite,
			Message: "name the agent you act for with the headers " + HeaderGatewaySession + " and " + HeaderGatewayAgent +
				" (a session you may manage and one of its agents), or call with that agent's token"}
	}
	return c.Next()
}

// providerBearer reports whether the request authenticated with a Bearer
// token the identity provider issued: neither an agent token nor a key
// (API, local mode's, debug or managed), which carry no audience.
func providerBearer(c *fiber.Ctx, p domain.Principal) (token string, ok bool) {
	cred, err := credentialFrom(c)
	if err == nil && cred.Kind == ports.CredentialBearer && p.Key == nil &&
		p.Method != domain.MethodAPIKey && p.Method != domain.MethodLocal && p.Method != domain.MethodDebug {
		return cred.Value, true
	}
	return "", false
}

// mcpRequest reads the request for the flow (into the request's state).
func (s *Server) mcpRequest(c *fiber.Ctx) *app.MCPRequest {
	st := stateOf(c)
	in := &st.mcp
	*in = app.MCPRequest{Server: c.Params("server"), ProtocolVersion: c.Get(mcpwire.HeaderProtocolVersion),
		SessionID: c.Get(mcpwire.HeaderSessionID), Method: c.Get(mcpwire.HeaderMethod), Name: c.Get(mcpwire.HeaderName),
		Body: c.Body(), RequestID: st.id, Client: st.intent.Client, Path: st.intent.Path}
	c.Request().Header.VisitAll(func(k, v []byte) {
		if len(k) > len(mcpwire.HeaderParamPrefix) && strings.EqualFold(string(k[:len(mcpwire.HeaderParamPrefix)]), mcpwire.HeaderParamPrefix) {
			in.Params = append(in.Params, ports.MCPParam{Name: string(k[len(mcpwire.HeaderParamPrefix):]), Value: string(v)})
		}
	})
	if st.agent != nil {
		in.Caller.Agent = c.Locals(verifiedKey{}).(*app.VerifiedAgent)
	} else {
		token, bearer := providerBearer(c, st.principal)
		in.Caller = app.MCPCaller{Principal: st.principal, ProviderBearer: bearer, ProviderToken: token,
			Session: c.Get(HeaderGatewaySession), AgentID: c.Get(HeaderGatewayAgent)}
	}
	return in
}

// mcpAnswer writes the flow's answer, or its error.
func (s *Server) mcpAnswer(c *fiber.Ctx, a app.MCPAnswer, err error) error {
	st := stateOf(c)
	if a.Note != "" {
		st.note = a.Note
	}
	if a.Refused {
		st.refused = true
	}
	if a.Reason != "" {
		st.reason = a.Reason
	}
	if a.UpstreamError != "" {
		s.log.Info("mcp upstream failed: " + a.UpstreamError)
	}
	switch {
	case err != nil:
		return err
	case a.Fail != "":
		return fiber.NewError(a.Status, a.Fail)
	case a.SessionID != "":
		c.Set(mcpwire.HeaderSessionID, a.SessionID)
	}
	switch {
	case a.Held != nil:
		return s.holdStream(c, a.Held)
	case a.Relay != nil:
		return s.relayStream(c, a.Relay)
	case a.JSON != nil:
		c.Status(a.Status)
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(a.JSON)
	case a.Events != nil:
		c.Status(a.Status)
		c.Set(fiber.HeaderContentType, "text/event-stream")
		w := c.Response().BodyWriter()
		for _, e := range a.Events {
			if err := mcpwire.WriteEvent(w, e); err != nil {
				return err
			}
		}
		return nil
	}
	return c.SendStatus(a.Status)
}

// mcpPost decides one message a client posts.
func (s *Server) mcpPost(c *fiber.Ctx) error {
	a, err := s.uc.MCP.Post(c.UserContext(), s.mcpRequest(c))
	return s.mcpAnswer(c, a, err)
}

// mcpGet relays the server's own event stream.
func (s *Server) mcpGet(c *fiber.Ctx) error {
	a, err := s.uc.MCP.Get(c.UserContext(), s.mcpRequest(c))
	return s.mcpAnswer(c, a, err)
}

// mcpDelete ends the MCP session, at the server and here.
func (s *Server) mcpDelete(c *fiber.Ctx) error {
	a, err := s.uc.MCP.Delete(c.UserContext(), s.mcpRequest(c))
	return s.mcpAnswer(c, a, err)
}

// upstreamFailed answers a server's failure to answer the gateway (502),
// logging what failed.
func (s *Server) upstreamFailed(err error) error {
	var uf *app.MCPUpstreamFailed
	if errors.As(err, &uf) {
		s.log.Info("mcp upstream failed", zap.String("what", uf.Message), zap.Error(uf.Err))
		return fiber.NewError(fiber.StatusBadGateway, uf.Message)
	}
	return err
}
