package wire

// The role keys of auth.keys, and the MCP gateway's edge.

import (
	gwire "github.com/google/wire"

	"github.com/agentauth/agentauth/adapters/identity/apikey"
	"github.com/agentauth/agentauth/config"
)

// accessSet provides the role keys and the gateway's edge.
var accessSet = gwire.NewSet(gatewayEdge, roleKeys)

// roleKeys reads the keys of auth.keys for the API-key, local and debug
// rings.
func roleKeys(cfg config.Config) (apikey.RoleKeys, error) {
	keys, err := cfg.RoleKeys()
	if err != nil {
		return nil, err
	}
	out := make(apikey.RoleKeys, len(keys))
	for i, k := range keys {
		out[i] = apikey.Entry{Key: k.Key, Principal: k.Principal}
	}
	return out, nil
}
