package domain

import "testing"

// TestGatewayServerOf: only {base}/mcp/{server}, canonically, names a
// gateway resource; every near miss names none.
func TestGatewayServerOf(t *testing.T) {
	const base = "https://agentauth.example/aa"
	tests := []struct {
		name, base, resource, want string
	}{
		{"the resource", base, base + "/mcp/fs", "fs"},
		{"scheme and host in another case, default port", base, "HTTPS://AgentAuth.Example:443/aa/mcp/fs", "fs"},
		{"base with a trailing slash", base + "/", base + "/mcp/fs", "fs"},
		{"base at the root", "https://agentauth.example", "https://agentauth.example/mcp/fs", "fs"},
		{"base at the root with a slash", "https://agentauth.example/", "https://agentauth.example/mcp/fs", "fs"},
		{"a name with dots and dashes", base, base + "/mcp/fs-2.prod", "fs-2.prod"},
		{"trailing slash", base, base + "/mcp/fs/", ""},
		{"a path below the server", base, base + "/mcp/fs/tools", ""},
		{"dot-dot", base, base + "/mcp/../x", ""},
		{"escaped dot-dot", base, base + "/mcp/%2e%2e/x", ""},
		{"dot-dot alone", base, base + "/mcp/..", ""},
		{"dot alone", base, base + "/mcp/.", ""},
		{"escaped slash", base, base + "/mcp/fs%2Fx", ""},
		{"mcpx", base, base + "/mcpx/fs", ""},
		{"no server", base, base + "/mcp/", ""},
		{"the prefix without its slash", base, base + "/mcp", ""},
		{"a query", base, base + "/mcp/fs?x=1", ""},
		{"a fragment", base, base + "/mcp/fs#x", ""},
		{"another base path", base, "https://agentauth.example/other/mcp/fs", ""},
		{"the base path in another case", base, "https://agentauth.example/AA/mcp/fs", ""},
		{"another host", base, "https://evil.example/aa/mcp/fs", ""},
		{"a host that only starts alike", base, "https://agentauth.example.evil/aa/mcp/fs", ""},
		{"another scheme", base, "http://agentauth.example/aa/mcp/fs", ""},
		{"another port", base, "https://agentauth.example:8443/aa/mcp/fs", ""},
		{"user info", base, "https://x@agentauth.example/aa/mcp/fs", ""},
		{"a client id", base, "agentauth", ""},
		{"empty", base, "", ""},
		{"no base", "", base + "/mcp/fs", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := GatewayServerOf(tt.base, tt.resource)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("GatewayServerOf(%q, %q) = %q, %v; want %q", tt.base, tt.resource, got, ok, tt.want)
			}
		})
	}
}

func TestNamesGatewayServer(t *testing.T) {
	const base = "https://agentauth.example"
	p := Principal{Audience: []string{"agentauth", base + "/mcp/fs", base + "/mcp/db/"}}
	for server, want := range map[string]bool{"fs": true, "db": false, "other": false, "": false} {
		if got := p.NamesGatewayServer(base, server); got != want {
			t.Errorf("NamesGatewayServer(%q) = %v, want %v", server, got, want)
		}
	}
}
