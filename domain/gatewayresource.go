package domain

import "strings"

// ReasonTokenGatewayOnly: a provider access token issued only for gateway
// resources (RFC 8707) was presented anywhere but the gateway endpoint of
// the server its audience names.
const ReasonTokenGatewayOnly = "token_audience_gateway_only"

// GatewayServerOf is the server a resource URL names under the gateway's
// resource base: {base}/mcp/{server}, compared canonically
// (CanonicalResource). ok is false for every other URL: another base, a
// path below or beside /mcp/ ("/mcpx/s", "/mcp/s/", "/mcp/../x"), a query,
// an escape, or a server name that is not one.
func GatewayServerOf(base, resource string) (server string, ok bool) {
	b, err := CanonicalResource(base)
	if err != nil {
		return "", false
	}
	r, err := CanonicalResource(resource)
	if err != nil {
		return "", false
	}
	server, ok = strings.CutPrefix(r, strings.TrimSuffix(b, "/")+"/mcp/")
	if !ok || server == "." || server == ".." || strings.Contains(server, "/") || ValidateName("server", server) != nil {
		return "", false
	}
	return server, true
}

// NamesGatewayServer reports whether the principal's audience names the
// gateway resource of server under base.
func (p Principal) NamesGatewayServer(base, server string) bool {
	for _, a := range p.Audience {
		if s, ok := GatewayServerOf(base, a); ok && s == server {
			return true
		}
	}
	return false
}
