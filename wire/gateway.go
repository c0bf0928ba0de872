package wire

// The MCP gateway (/mcp/{server} on the API port): its flow and edge.

import (
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/agenttoken"
	"github.com/agentauth/agentauth/adapters/mcpproxy"
	"github.com/agentauth/agentauth/adapters/rest"
	"github.com/agentauth/agentauth/adapters/upstreamauth"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/internal/secretfile"
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

// People's own credentials upstream: a refresh lease bounds one
// instance's refresh (the others wait for it, reading the connection this
// often), and an exchanged token is used until this long before it
// expires.
const (
	connectionLease     = 30 * time.Second
	connectionPoll      = 100 * time.Millisecond
	exchangeBefore      = 30 * time.Second
	upstreamAuthTimeout = 15 * time.Second
)

// connectionsSettings configure each person's own credential upstream:
// the key that seals their tokens (gateway.connections.keyFile; in SQLite
// mode one is made in the data folder when none is set; in PostgreSQL
// mode, where every instance needs the same, connections are off without
// it), and agentauth's own OIDC client for token exchange.
func connectionsSettings(cfg config.Config, st Stores, log *zap.Logger) (*app.ConnectionsSettings, error) {
	cn := cfg.Gateway.Connections
	var keys [][]byte
	seal := cn.Key
	if seal == "" && !st.Shared {
		path := cfg.ConnectionsKeyPath()
		var created bool
		var err error
		if seal, created, err = secretfile.LoadOrCreate(path); err != nil {
			return nil, err
		}
		if created {
			log.Info("created the key that seals people's upstream tokens", zap.String("path", path))
		}
	}
	for _, k := range []string{seal, cn.PreviousKey} {
		if k == "" {
			continue
		}
		b, err := config.SealKey(k)
		if err != nil {
			return nil, err
		}
		keys = append(keys, b)
	}
	if len(keys) == 0 {
		log.Info("people's connections to servers' upstreams (upstream_auth type oauth2) are off: set gateway.connections.keyFile, the same on every instance")
	}
	ac := upstreamauth.Config{CredentialsDir: cfg.Gateway.CredentialsDir, Timeout: upstreamAuthTimeout}
	if o := cfg.Auth.OIDC; o.Enabled {
		secret, err := o.Secret()
		if err != nil {
			return nil, err
		}
		ac.Issuer, ac.ClientID, ac.ClientSecret = o.Issuer, o.ClientID, secret
	}
	auth, err := upstreamauth.New(ac)
	if err != nil {
		return nil, err
	}
	return &app.ConnectionsSettings{Authorizer: auth, Config: app.ConnectionsConfig{Keys: keys, Base: cfg.GatewayResourceURL(),
		RefreshBefore: cn.RefreshBefore, Lease: connectionLease, Poll: connectionPoll, ExchangeBefore: exchangeBefore}}, nil
}
