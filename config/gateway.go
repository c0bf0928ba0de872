package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Gateway configures the MCP gateway (/mcp/{server} on the API port).
type Gateway struct {
	// ResourceURL is the API's public URL, with the base path, that the
	// gateway's resources are named under ({ResourceURL}/mcp/{server});
	// empty: http://{server.host}:{server.port}{server.basePath}.
	ResourceURL string `yaml:"resourceURL" env:"SERVICE_GATEWAY_RESOURCE_URL"`
	// CredentialsDir holds the upstream credentials, one file per name a
	// server registration gives (a mounted Kubernetes Secret).
	CredentialsDir string `yaml:"credentialsDir" env:"SERVICE_GATEWAY_CREDENTIALS_DIR"`
	// MetadataURL is the public URL of the listener serving the
	// protected-resource metadata; empty: http://{management listener}.
	MetadataURL string `yaml:"metadataURL" env:"SERVICE_GATEWAY_METADATA_URL"`
	// AuthorizationServers of the metadata; empty: the OIDC issuer (when
	// on) and the agent-token issuer.
	AuthorizationServers []string      `yaml:"authorizationServers" env:"SERVICE_GATEWAY_AUTHORIZATION_SERVERS"`
	CallTimeout          time.Duration `yaml:"callTimeout" env:"SERVICE_GATEWAY_CALL_TIMEOUT"`
	AskTimeout           time.Duration `yaml:"askTimeout" env:"SERVICE_GATEWAY_ASK_TIMEOUT"`
	StreamTimeout        time.Duration `yaml:"streamTimeout" env:"SERVICE_GATEWAY_STREAM_TIMEOUT"`
	MaxMessageBytes      int64         `yaml:"maxMessageBytes" env:"SERVICE_GATEWAY_MAX_MESSAGE_BYTES"`
	// AuditArguments > 0 records each call's arguments (canonical JSON)
	// in its audit record, cut to that many bytes; 0: their hash only.
	AuditArguments int `yaml:"auditArguments" env:"SERVICE_GATEWAY_AUDIT_ARGUMENTS"`
	// Connections configure each person's own credential upstream.
	Connections Connections `yaml:"connections"`
}

// Connections configure people's connections to servers' upstreams
// (upstream_auth type oauth2) and token exchange.
type Connections struct {
	// KeyFile holds the key that seals the upstream tokens at rest (read
	// into Key at load); empty and no Key: {dataDir}/secrets/connections.key,
	// created on first start in SQLite mode, none in PostgreSQL mode (where
	// every instance needs the same key: connections are then off).
	KeyFile string `yaml:"keyFile" env:"SERVICE_GATEWAY_CONNECTIONS_KEY_FILE"`
	Key     string `yaml:"-" env:"SERVICE_GATEWAY_CONNECTIONS_KEY"`
	// PreviousKeyFile is the key rotated out (read into PreviousKey): it
	// still opens what it sealed, which is sealed again under Key as it
	// is used.
	PreviousKeyFile string `yaml:"previousKeyFile" env:"SERVICE_GATEWAY_CONNECTIONS_PREVIOUS_KEY_FILE"`
	PreviousKey     string `yaml:"-" env:"SERVICE_GATEWAY_CONNECTIONS_PREVIOUS_KEY"`
	// RefreshBefore: an access token expiring within it is refreshed
	// before it is sent.
	RefreshBefore time.Duration `yaml:"refreshBefore" env:"SERVICE_GATEWAY_CONNECTIONS_REFRESH_BEFORE"`
}

// ConnectionsKeyPath is where SQLite mode keeps the connections' key
// when none is configured.
func (c Config) ConnectionsKeyPath() string {
	return filepath.Join(c.DataDir, "secrets", "connections.key")
}

// maxGatewayMessage is the API's body limit: no message can be larger.
const maxGatewayMessage = 1 << 20

// maxAuditArguments bounds the arguments an audit record may hold.
const maxAuditArguments = 4096

func defaultGateway() Gateway {
	return Gateway{CallTimeout: time.Minute, AskTimeout: 5 * time.Minute, StreamTimeout: 30 * time.Minute, MaxMessageBytes: maxGatewayMessage,
		Connections: Connections{RefreshBefore: time.Minute}}
}

// GatewayResourceURL is gateway.resourceURL, or the API's own URL with
// the base path.
func (c Config) GatewayResourceURL() string {
	if c.Gateway.ResourceURL != "" {
		return strings.TrimSuffix(c.Gateway.ResourceURL, "/")
	}
	return "http://" + c.Addr() + c.Server.BasePath
}

// GatewayMetadataURL is gateway.metadataURL, or the public listener's URL,
// or the management listener's; empty when none is set (the 401 then
// names no metadata).
func (c Config) GatewayMetadataURL() string {
	switch {
	case c.Gateway.MetadataURL != "":
		return strings.TrimSuffix(c.Gateway.MetadataURL, "/")
	case c.PublicAddr() != "":
		return "http://" + c.PublicAddr()
	case c.ManagementAddr() != "":
		return "http://" + c.ManagementAddr()
	}
	return ""
}

// GatewayAuthorizationServers is gateway.authorizationServers, or the
// OIDC issuer (when on) and the agent-token issuer.
func (c Config) GatewayAuthorizationServers() []string {
	if len(c.Gateway.AuthorizationServers) > 0 {
		return c.Gateway.AuthorizationServers
	}
	var out []string
	if c.Auth.OIDC.Enabled && c.Auth.OIDC.Issuer != "" {
		out = append(out, c.Auth.OIDC.Issuer)
	}
	return append(out, c.TokenIssuer())
}

func (c Config) validateGateway() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	g := c.Gateway
	if g.CredentialsDir != "" {
		if fi, err := os.Stat(g.CredentialsDir); err != nil || !fi.IsDir() {
			bad("%s: %q is not a folder", names("gateway.credentialsDir"), g.CredentialsDir)
		}
	}
	urls := append([]string{}, g.AuthorizationServers...)
	for _, u := range []string{g.MetadataURL, g.ResourceURL} {
		if u != "" {
			urls = append(urls, u)
		}
	}
	for _, raw := range urls {
		if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			bad("gateway: %q is not an http(s) URL without query or fragment (gateway.resourceURL, gateway.metadataURL, gateway.authorizationServers)", raw)
		}
	}
	for _, d := range []struct {
		key      string
		v        time.Duration
		min, max time.Duration
	}{
		{"gateway.callTimeout", g.CallTimeout, time.Second, 10 * time.Minute},
		{"gateway.askTimeout", g.AskTimeout, time.Second, time.Hour},
		{"gateway.streamTimeout", g.StreamTimeout, time.Second, 24 * time.Hour},
	} {
		if d.v < d.min || d.v > d.max {
			bad("%s: %v is outside %v to %v", names(d.key), d.v, d.min, d.max)
		}
	}
	if g.AuditArguments < 0 || g.AuditArguments > maxAuditArguments {
		bad("%s: %d is outside 0 to %d", names("gateway.auditArguments"), g.AuditArguments, maxAuditArguments)
	}
	if g.MaxMessageBytes < 1024 || g.MaxMessageBytes > maxGatewayMessage {
		bad("%s: %d is outside 1024 to %d", names("gateway.maxMessageBytes"), g.MaxMessageBytes, maxGatewayMessage)
	}
	cn := g.Connections
	for _, k := range []struct{ key, setting string }{{cn.Key, "gateway.connections.keyFile"}, {cn.PreviousKey, "gateway.connections.previousKeyFile"}} {
		if _, err := SealKey(k.key); k.key != "" && err != nil {
			bad("%s: want a 32-byte key in base64url (as `head -c 32 /dev/urandom | basenc --base64url` writes it)", names(k.setting))
		}
	}
	if cn.PreviousKey != "" && cn.Key == "" {
		bad("%s: set with gateway.connections.keyFile (the key that seals from now on)", names("gateway.connections.previousKeyFile"))
	}
	if cn.RefreshBefore < time.Second || cn.RefreshBefore > time.Hour {
		bad("%s: %v is outside 1s to 1h", names("gateway.connections.refreshBefore"), cn.RefreshBefore)
	}
	return errs
}

// SealKey reads a 32-byte key written in base64url (padded or not).
func SealKey(s string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil || len(b) != 32 {
		return nil, errors.New("want a 32-byte key in base64url")
	}
	return b, nil
}
