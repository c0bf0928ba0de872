package rest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/domain"
)

// The public listener (server.publicPort, off by default) is where the
// agent-token issuer lives: the documents a client reads before it holds
// any credential — the RFC 8414 metadata and the key set — without
// credentials, and the two OAuth endpoints they name. The API port cannot
// serve the documents (every request there but GET /health needs a
// credential), and the management listener, which serves metrics and
// probes and is meant to stay inside the cluster, should not be exposed to
// tool servers and MCP clients that may run outside it; a listener of its
// own lets operators publish exactly these four paths.
//
// The issuer (auth.agentTokens.issuer, default the public listener's URL
// with server.basePath) names where they are served: the metadata at
// /.well-known/oauth-authorization-server with the issuer's path inserted
// after it (RFC 8414 §3.1), so that its issuer is exactly where clients
// fetched it from (§3.3); the key set and the endpoints under the issuer.
// The endpoints are audited as on the API port; the documents, like
// GET /health, are not access decisions and are not.

// PublicApp is the public listener's Fiber application (nil without agent
// tokens), for tests that use app.Test.
func (s *Server) PublicApp() *fiber.App { return s.publicApp }

// newPublicApp builds the public listener's routes.
func (s *Server) newPublicApp() *fiber.App {
	app := fiber.New(s.fiberConfig())
	// The metadata's path lies outside the base path (§3.1 inserts the
	// issuer's path after the well-known segment), so it is answered by a
	// global stage before the base path's: a route registered there would
	// shift Fiber's route index under the rewritten path.
	at := metadataPath + issuerPath(s.cfg.AgentTokens.Keys.Issuer())
	app.Use(s.withRequestID, s.accessLog, func(c *fiber.Ctx) error {
		if c.Path() == at && (c.Method() == fiber.MethodGet || c.Method() == fiber.MethodHead) {
			return s.serveMetadata(c)
		}
		if served, err := s.publicGateway(c); served {
			return err
		}
		return c.Next()
	})
	if s.cfg.BasePath != "" {
		app.Use(s.underBasePath)
	}
	app.Get(jwksPath, s.serveJWKS)
	app.Use(s.audit, s.recoverPanic)
	app.Post(tokenEndpoint, s.public, s.exchangeToken)
	app.Use(s.authenticate, s.gatewayOnly)
	app.Post(introspectionEndpoint, s.require(domain.PermTokensIntrospect), s.introspect)
	return app
}

// issuerPath is the path of the issuer URL without a trailing slash: what
// RFC 8414 §3.1 inserts after the well-known segment.
func issuerPath(issuer string) string {
	u, err := url.Parse(issuer)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(u.EscapedPath(), "/")
}

// servePublic runs the public listener on ln until ctx ends, then waits
// for stop (the API listener has drained) before it shuts down.
func (s *Server) servePublic(ctx context.Context, ln net.Listener, stop <-chan struct{}) error {
	s.log.Info("public listener (agent-token discovery)", zap.String("url", "http://"+ln.Addr().String()),
		zap.String("issuer", s.cfg.AgentTokens.Keys.Issuer()))
	served := make(chan error, 1)
	go func() { served <- s.publicApp.Listener(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("public listener: %w", err)
	case <-ctx.Done():
	}
	<-stop
	_ = s.publicApp.ShutdownWithTimeout(s.cfg.ShutdownTimeout)
	_ = ln.Close()
	if err := <-served; err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("public listener: %w", err)
	}
	return nil
}
