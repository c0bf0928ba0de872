package config

import (
	"strings"
	"testing"
	"time"
)

func TestAPIKeySettings(t *testing.T) {
	tests := []struct {
		name string
		set  func(*APIKeys)
		want string // "" valid, else a part of the error
	}{
		{"defaults", func(*APIKeys) {}, ""},
		{"a year", func(a *APIKeys) { a.MaxTTL = 365 * 24 * time.Hour }, ""},
		{"maxTTL too short", func(a *APIKeys) { a.MaxTTL = time.Minute }, "auth.apiKeys.maxTTL / SERVICE_API_KEYS_MAX_TTL / --api-keys-max-ttl"},
		{"maxTTL too long", func(a *APIKeys) { a.MaxTTL = 400 * 24 * time.Hour }, "auth.apiKeys.maxTTL"},
		{"no key per owner", func(a *APIKeys) { a.MaxPerOwner = 0 }, "auth.apiKeys.maxPerOwner / SERVICE_API_KEYS_MAX_PER_OWNER"},
	}
	for _, tt := range tests {
		c := Defaults()
		tt.set(&c.Auth.APIKeys)
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
