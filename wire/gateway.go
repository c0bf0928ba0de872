package wire

// The MCP gateway (/mcp/{server} on the API port): its use case and edge.

import (
	"time"

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

func gatewayEdge(cfg config.Config, uc *app.Gateway) *rest.Gateway {
	g := cfg.Gateway
	return &rest.Gateway{Use: uc, Upstream: mcpproxy.NewUpstream(mcpproxy.Limits{MaxBytes: g.MaxMessageBytes, MaxMessages: gatewayMaxMessages}),
		CredentialsDir: g.CredentialsDir, ResourceBase: cfg.GatewayResourceURL(), MetadataURL: cfg.GatewayMetadataURL(),
		AuthorizationServers: cfg.GatewayAuthorizationServers(), CallTimeout: g.CallTimeout, AskTimeout: g.AskTimeout,
		StreamTimeout: g.StreamTimeout, MaxMessageBytes: g.MaxMessageBytes, AuditArgumentBytes: g.AuditArguments,
		Poll: gatewayPoll, KeepAlive: gatewayKeepAlive}
}
