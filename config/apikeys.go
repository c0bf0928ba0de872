package config

import (
	"fmt"
	"time"
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

// validate checks the managed-key settings.
func (a APIKeys) validate() []error {
	var errs []error
	if a.MaxTTL < time.Hour || a.MaxTTL > 366*24*time.Hour {
		errs = append(errs, fmt.Errorf("%s: %v is outside 1h to 8784h (366 days)", names("auth.apiKeys.maxTTL"), a.MaxTTL))
	}
	if a.MaxPerOwner < 1 || a.MaxPerOwner > 1000 {
		errs = append(errs, fmt.Errorf("%s: %d is outside 1 to 1000", names("auth.apiKeys.maxPerOwner"), a.MaxPerOwner))
	}
	return errs
}
