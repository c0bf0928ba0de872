package wire

// The MCP gateway (/mcp/{server} on the API port): its flow and edge.

import (
	"time"

	"github.com/agentauth/agentauth/adapters/agenttoken"
	"github.com/agentauth/agentauth/adapters/mcpproxy"
	"github.com/agentauth/agentauth/adapters/rest"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/config"
)

// Held calls read their approval this often, and their stream gets a
// keep-alive comment this often (proxies close idle streams at ~60 s).
const (
	gatewayPoll      = 500 * time.Millisecond
	gatewayKeepAlive = 15 * time.Second
	// gatewayMaxMessages bounds the notifications a server may send
	// before its answer to one request.
	gatewayMaxMessages = 256
)

// gatewaySettings configure the gateway's flow. It seals the gateway's MCP
// session ids with a key derived from the agent-token signing key, which
// every instance of a cluster shares: a session opened on one instance
// goes on at any other.
func gatewaySettings(cfg config.Config, keys *agenttoken.Signer) (*app.MCPSettings, error) {
	g := cfg.Gateway
	sessionKey, err := keys.DeriveKey("mcp gateway sessions v1")
	if err != nil {
		return nil, err
	}
	return &app.MCPSettings{SessionKey: sessionKey,
		Upstream:     mcpproxy.NewUpstream(mcpproxy.Limits{MaxBytes: g.MaxMessageBytes, MaxMessages: gatewayMaxMessages}),
		Credentials:  mcpproxy.NewCredentials(g.CredentialsDir),
		ResourceBase: cfg.GatewayResourceURL(), CallTimeout: g.CallTimeout, AskTimeout: g.AskTimeout, StreamTimeout: g.StreamTimeout,
		MaxMessageBytes: g.MaxMessageBytes, AuditArgumentBytes: g.AuditArguments, Poll: gatewayPoll, KeepAlive: gatewayKeepAlive}, nil
}

// gatewayEdge serves the gateway and its protected-resource metadata.
func gatewayEdge(cfg config.Config) *rest.Gateway {
	return &rest.Gateway{MetadataURL: cfg.GatewayMetadataURL(), AuthorizationServers: cfg.GatewayAuthorizationServers()}
}
