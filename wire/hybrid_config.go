package wire

import (
	"github.com/agentauth/agentauth/adapters/identity/hybrid"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/config"
)

// noLogin: hybrid mode keeps no cookie sessions (a browser signs in at
// the centre).
func noLogin() *app.Login { return nil }

// hybridConfig turns auth.hybrid.* into the hybrid adapter's settings.
func hybridConfig(cfg config.Config) hybrid.Config {
	h := cfg.Auth.Hybrid
	return hybrid.Config{RemoteURL: h.RemoteURL, CAFile: h.CAFile, CacheTTL: h.CacheTTL, CacheSize: h.CacheSize, Timeout: h.Timeout}
}
