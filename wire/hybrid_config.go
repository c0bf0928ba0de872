package wire

import (
	"github.com/agentauth/agentauth/adapters/identity/hybrid"
	"github.com/agentauth/agentauth/config"
)

// hybridConfig turns auth.hybrid.* into the hybrid adapter's settings.
func hybridConfig(cfg config.Config) hybrid.Config {
	h := cfg.Auth.Hybrid
	return hybrid.Config{RemoteURL: h.RemoteURL, CAFile: h.CAFile, CacheTTL: h.CacheTTL, CacheSize: h.CacheSize, Timeout: h.Timeout}
}
