package rest

import (
	"encoding/json"
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

// resourceURL names the gateway resource of server.
func (g *Gateway) resourceURL(server string) string {
	return strings.TrimSuffix(g.ResourceBase, "/") + "/mcp/" + server
}

// metadataURL is where the resource's metadata is published.
func (g *Gateway) metadataURL(server string) string {
	u, err := url.Parse(g.resourceURL(server))
	if err != nil || g.MetadataURL == "" {
		return ""
	}
	return g.MetadataURL + protectedResourcePath + u.EscapedPath()
}

// gatewayChallenge is the resource_metadata parameter (RFC 9728 §5.1) of
// a 401 to a gateway request; "" elsewhere.
func (s *Server) gatewayChallenge(c *fiber.Ctx) string {
	gw := s.cfg.Gateway
	server, ok := strings.CutPrefix(c.Path(), "/mcp/")
	if gw == nil || !ok || domain.ValidateName("server", server) != nil || strings.Contains(server, "/") {
		return ""
	}
	if m := gw.metadataURL(server); m != "" {
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

// managementGateway publishes the metadata on the management listener.
func (s *Server) managementGateway(mux *http.ServeMux) {
	gw := s.cfg.Gateway
	if gw == nil {
		return
	}
	mux.HandleFunc("GET "+protectedResourcePath+"/", func(w http.ResponseWriter, r *http.Request) {
		base, err := url.Parse(gw.resourceURL(""))
		rest, ok := strings.CutPrefix(r.URL.Path, protectedResourcePath)
		server, found := strings.CutPrefix(rest, strings.TrimSuffix(base.Path, "/")+"/")
		if err != nil || !ok || !found || strings.Contains(server, "/") {
			http.NotFound(w, r)
			return
		}
		sv, err := gw.Use.Server(r.Context(), server)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		_ = json.NewEncoder(w).Encode(protectedResource{Resource: gw.resourceURL(sv.Name), AuthorizationServers: gw.AuthorizationServers,
			BearerMethodsSupported: []string{"header"}, ResourceName: "agentauth MCP gateway to " + sv.Name})
	})
}
