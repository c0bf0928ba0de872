package config

import (
	"fmt"
	"time"

	"github.com/agentauth/agentauth/internal/centreurl"
)

// Hybrid is hybrid mode (auth.hybrid.*): every caller's roles come from a
// central agentauth instance.
type Hybrid struct {
	RemoteURL string        `yaml:"remoteUrl" env:"SERVICE_HYBRID_REMOTE_URL"`
	CAFile    string        `yaml:"caFile" env:"SERVICE_HYBRID_CA_FILE"`
	CacheTTL  time.Duration `yaml:"cacheTTL" env:"SERVICE_HYBRID_CACHE_TTL"`
	CacheSize int           `yaml:"cacheSize" env:"SERVICE_HYBRID_CACHE_SIZE"`
	Timeout   time.Duration `yaml:"timeout" env:"SERVICE_HYBRID_TIMEOUT"`
}

// defaultHybrid is hybrid mode's part of Defaults (off).
func defaultHybrid() Hybrid {
	return Hybrid{CacheTTL: 30 * time.Second, CacheSize: 10_000, Timeout: 5 * time.Second}
}

// Enabled reports whether hybrid mode is configured.
func (h Hybrid) Enabled() bool { return h.RemoteURL != "" }

// validateHybrid checks the hybrid settings. Hybrid mode grants no role by
// itself, so any setting that would (an API key, debug keys, OIDC role
// extraction) is refused next to it rather than silently ignored.
func (c Config) validateHybrid() []error {
	h := c.Auth.Hybrid
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !h.Enabled() {
		if h != defaultHybrid() {
			bad("auth.hybrid.* / SERVICE_HYBRID_*: set, but auth.hybrid.remoteUrl / SERVICE_HYBRID_REMOTE_URL is empty; set the central instance's URL or remove the other hybrid settings")
		}
		return errs
	}
	if err := centreurl.Check(h.RemoteURL); err != nil {
		bad("auth.hybrid.remoteUrl / SERVICE_HYBRID_REMOTE_URL: %v", err)
	}
	if c.Auth.APIKey != "" {
		bad("SERVICE_HYBRID_REMOTE_URL (hybrid mode) cannot be combined with SERVICE_API_KEY / --api-key: in hybrid mode roles come only from the central instance; unset one")
	}
	if c.Auth.Debug {
		bad("SERVICE_HYBRID_REMOTE_URL (hybrid mode) cannot be combined with SERVICE_AUTH_DEBUG=true: in hybrid mode roles come only from the central instance; unset one")
	}
	if c.Auth.OIDC.Enabled {
		bad("SERVICE_HYBRID_REMOTE_URL (hybrid mode) cannot be combined with SERVICE_OIDC_ENABLED=true: in hybrid mode roles come only from the central instance; unset one")
	}
	if h.CacheTTL <= 0 {
		bad("auth.hybrid.cacheTTL / SERVICE_HYBRID_CACHE_TTL: %s is not positive; use a duration such as 30s (the default)", h.CacheTTL)
	}
	if h.CacheSize <= 0 {
		bad("auth.hybrid.cacheSize / SERVICE_HYBRID_CACHE_SIZE: %d is not positive; use a number of entries such as 10000 (the default)", h.CacheSize)
	}
	if h.Timeout <= 0 {
		bad("auth.hybrid.timeout / SERVICE_HYBRID_TIMEOUT: %s is not positive; use a duration such as 5s (the default)", h.Timeout)
	}
	return errs
}
