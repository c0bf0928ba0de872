package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// APIKeys bounds the managed API keys people and service accounts make
// (POST /api/v2/keys).
type APIKeys struct {
	// MaxTTL is the latest expiry a key may be given, from its creation.
	MaxTTL time.Duration `yaml:"maxTTL" env:"SERVICE_API_KEYS_MAX_TTL"`
	// MaxPerOwner is how many keys neither revoked nor expired one owner
	// may hold.
	MaxPerOwner int `yaml:"maxPerOwner" env:"SERVICE_API_KEYS_MAX_PER_OWNER"`
}

// Defaults of the managed keys: 90 days, 20 keys.
const (
	defaultAPIKeysMaxTTL      = 90 * 24 * time.Hour
	defaultAPIKeysMaxPerOwner = 20
)

// validateAPIKeys checks the managed-key settings, and that the API key
// does not look like a managed key: every aak_ credential is decided by the
// managed keys alone, so such an API key would never be accepted.
func (c Config) validateAPIKeys() []error {
	var errs []error
	a := c.Auth.APIKeys
	if strings.HasPrefix(c.Auth.APIKey, domain.KeyPrefix) {
		errs = append(errs, fmt.Errorf("SERVICE_API_KEY / --api-key: must not start with %q, the prefix of managed API keys (it would never be accepted)", domain.KeyPrefix))
	}
	if a.MaxTTL < time.Hour || a.MaxTTL > 366*24*time.Hour {
		errs = append(errs, fmt.Errorf("%s: %v is outside 1h to 8784h (366 days)", names("auth.apiKeys.maxTTL"), a.MaxTTL))
	}
	if a.MaxPerOwner < 1 || a.MaxPerOwner > 1000 {
		errs = append(errs, fmt.Errorf("%s: %d is outside 1 to 1000", names("auth.apiKeys.maxPerOwner"), a.MaxPerOwner))
	}
	return errs
}
