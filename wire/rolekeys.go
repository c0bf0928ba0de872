package wire

// The role keys of auth.keys.

import (
	"github.com/agentauth/agentauth/adapters/identity/apikey"
	"github.com/agentauth/agentauth/config"
)

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
