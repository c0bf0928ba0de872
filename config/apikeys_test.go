package config

import (
	"strings"
	"testing"
	"time"
)

func TestAPIKeySettings(t *testing.T) {
	tests := []struct {
		name string
		set  func(*Config)
		want string // "" valid, else a part of the error
	}{
		{"defaults", func(*Config) {}, ""},
		{"a year", func(c *Config) { c.Auth.APIKeys.MaxTTL = 365 * 24 * time.Hour }, ""},
		{"maxTTL too short", func(c *Config) { c.Auth.APIKeys.MaxTTL = time.Minute }, "auth.apiKeys.maxTTL / SERVICE_API_KEYS_MAX_TTL / --api-keys-max-ttl"},
		{"maxTTL too long", func(c *Config) { c.Auth.APIKeys.MaxTTL = 400 * 24 * time.Hour }, "auth.apiKeys.maxTTL"},
		{"no key per owner", func(c *Config) { c.Auth.APIKeys.MaxPerOwner = 0 }, "auth.apiKeys.maxPerOwner / SERVICE_API_KEYS_MAX_PER_OWNER"},
		{"an API key that looks managed", func(c *Config) { c.Auth.APIKey = "aak_0123456789abcdef" }, "SERVICE_API_KEY"},
	}
	for _, tt := range tests {
		c := Defaults()
		tt.set(&c)
		err := c.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want an error naming %s", tt.name, err, tt.want)
		}
	}
	if got, want := Defaults().Auth.APIKeys, (APIKeys{MaxTTL: 90 * 24 * time.Hour, MaxPerOwner: 20}); got != want {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
}
