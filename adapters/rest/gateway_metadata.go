package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/domain"
)

// RFC 9728 protected-resource metadata: each gateway resource
// {ResourceBase}/mcp/{server} has its document at
// {MetadataURL}/.well-known/oauth-protected-resource{resource path},
// served by the management listener without credentials (the API port
// answers 401 to anything without one), and named by the gateway's 401.
const protectedResourcePath = "/.well-known/oauth-protected-resource"

// metadataURL is where the resource's metadata is published.
func (s *Server) metadataURL(server string) string {
	u, err := url.Parse(s.uc.MCP.ResourceURL(server))
	if err != nil || s.cfg.Gateway.MetadataURL == "" {
		return ""
	}
	return s.cfg.Gateway.MetadataURL + protectedResourcePath + u.EscapedPath()
}

// gatewayChallenge is the resource_metadata parameter (RFC 9728 §5.1) of
// a 401 to a gateway request; "" elsewhere.
func (s *Server) gatewayChallenge(c *fiber.Ctx) string {
	server, ok := strings.CutPrefix(c.Path(), "/mcp/")
	if !s.gatewayOn() || !ok || domain.ValidateName("server", server) != nil || strings.Contains(server, "/") {
		return ""
	}
	if m := s.metadataURL(server); m != "" {
		return `, resource_metadata="` + m + `"`
	}
	return ""
}

// protectedResource is the metadata document.
type protectedResource struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name"`
}

// resourceMetadata is the metadata document at path (under
// protectedResourcePath), for a registered server with an endpoint.
func (s *Server) resourceMetadata(ctx context.Context, path string) (protectedResource, bool) {
	base, err := url.Parse(s.uc.MCP.ResourceURL(""))
	rest, ok := strings.CutPrefix(path, protectedResourcePath)
	if err != nil || !ok {
		return protectedResource{}, false
	}
	server, found := strings.CutPrefix(rest, strings.TrimSuffix(base.Path, "/")+"/")
	if !found || strings.Contains(server, "/") {
		return protectedResource{}, false
	}
	sv, err := s.uc.Gateway.Server(ctx, server)
	if err != nil {
		return protectedResource{}, false
	}
	return protectedResource{Resource: s.uc.MCP.ResourceURL(sv.Name), AuthorizationServers: s.cfg.Gateway.AuthorizationServers,
		BearerMethodsSupported: []string{"header"}, ResourceName: "agentauth MCP gateway to " + sv.Name}, true
}

// managementGateway publishes the metadata on the management listener.
func (s *Server) managementGateway(mux *http.ServeMux) {
	if !s.gatewayOn() {
		return
	}
	mux.HandleFunc("GET "+protectedResourcePath+"/", func(w http.ResponseWriter, r *http.Request) {
		doc, ok := s.resourceMetadata(r.Context(), r.URL.Path)
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		_ = json.NewEncoder(w).Encode(doc)
	})
}

// publicGateway answers the metadata on the public listener: a global
// stage (its path lies outside the base path, as RFC 9728 §3.1 inserts
// the resource's path after the well-known segment); next otherwise.
func (s *Server) publicGateway(c *fiber.Ctx) (bool, error) {
	if !s.gatewayOn() || (c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead) ||
		!strings.HasPrefix(c.Path(), protectedResourcePath+"/") {
		return false, nil
	}
	doc, ok := s.resourceMetadata(c.UserContext(), c.Path())
	if !ok {
		return true, fmt.Errorf("no protected resource at %s: %w", c.Path(), domain.ErrNotFound)
	}
	c.Set(fiber.HeaderCacheControl, "max-age=300")
	return true, c.JSON(doc)
}
