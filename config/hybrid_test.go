package config

import (
	"strings"
	"testing"
	"time"
)

func TestHybridLoad(t *testing.T) {
	file := writeFile(t, `
auth:
  hybrid:
    remoteUrl: https://file.example
    caFile: /etc/ca.pem
    cacheTTL: 45s
    cacheSize: 50
    timeout: 2s
`)
	tests := []struct {
		name string
		path string
		env  map[string]string
		want Hybrid
	}{
		{"file", file, nil, Hybrid{RemoteURL: "https://file.example", CAFile: "/etc/ca.pem", CacheTTL: 45 * time.Second, CacheSize: 50, Timeout: 2 * time.Second}},
		{"environment overrides the file", file, map[string]string{
			"SERVICE_HYBRID_REMOTE_URL": "https://env.example",
			"SERVICE_HYBRID_CA_FILE":    "/env/ca.pem",
			"SERVICE_HYBRID_CACHE_TTL":  "10s",
			"SERVICE_HYBRID_CACHE_SIZE": "7",
			"SERVICE_HYBRID_TIMEOUT":    "1s",
		}, Hybrid{RemoteURL: "https://env.example", CAFile: "/env/ca.pem", CacheTTL: 10 * time.Second, CacheSize: 7, Timeout: time.Second}},
		{"environment only", "", map[string]string{"SERVICE_HYBRID_REMOTE_URL": "http://127.0.0.1:8080"}, Hybrid{RemoteURL: "http://127.0.0.1:8080", CacheTTL: 30 * time.Second, CacheSize: 10000, Timeout: 5 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(tt.path, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Auth.Hybrid; got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if got, want := c.Mode(), ModeHybrid; got != want {
				t.Errorf("mode: got %q, want %q", got, want)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("Validate: got %v, want nil", err)
			}
		})
	}
	if _, err := Load("", map[string]string{"SERVICE_HYBRID_CACHE_TTL": "soon"}); err == nil || !strings.Contains(err.Error(), "SERVICE_HYBRID_CACHE_TTL") {
		t.Errorf("bad duration: got %v, want an error naming SERVICE_HYBRID_CACHE_TTL", err)
	}
}

func TestHybridModeWinsOverTheOthers(t *testing.T) {
	c := Defaults()
	c.Auth.Hybrid.RemoteURL = "https://centre.example"
	c.Auth.APIKey = "0123456789abcdef0123"
	c.Auth.Debug = true
	c.Auth.OIDC.Enabled = true
	if got, want := c.Mode(), ModeHybrid; got != want {
		t.Errorf("mode: got %q, want %q", got, want)
	}
}

func TestValidateHybrid(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(*Config)
		wantErrs []string // substrings; none means valid
	}{
		{"https centre", func(c *Config) { c.Auth.Hybrid.RemoteURL = "https://centre.example" }, nil},
		{"http to loopback", func(c *Config) { c.Auth.Hybrid.RemoteURL = "http://localhost:8080" }, nil},
		{"http to another host", func(c *Config) { c.Auth.Hybrid.RemoteURL = "http://centre.example" },
			[]string{"SERVICE_HYBRID_REMOTE_URL", "plain http"}},
		{"not http", func(c *Config) { c.Auth.Hybrid.RemoteURL = "ftp://centre.example" }, []string{"SERVICE_HYBRID_REMOTE_URL"}},
		{"user info", func(c *Config) { c.Auth.Hybrid.RemoteURL = "https://u:p@centre.example" }, []string{"user info"}},
		{"with API key", func(c *Config) {
			c.Auth.Hybrid.RemoteURL = "https://centre.example"
			c.Auth.APIKey = "0123456789abcdef0123"
		}, []string{"SERVICE_API_KEY"}},
		{"with debug", func(c *Config) {
			c.Auth.Hybrid.RemoteURL = "https://centre.example"
			c.Auth.Debug = true
		}, []string{"SERVICE_AUTH_DEBUG"}},
		{"with OIDC", func(c *Config) {
			c.Auth.Hybrid.RemoteURL = "https://centre.example"
			c.Auth.OIDC.Enabled = true
		}, []string{"SERVICE_OIDC_ENABLED"}},
		{"negative values, all reported", func(c *Config) {
			c.Auth.Hybrid = Hybrid{RemoteURL: "https://centre.example", CacheTTL: -1, CacheSize: -1, Timeout: -1}
		}, []string{"SERVICE_HYBRID_CACHE_TTL", "SERVICE_HYBRID_CACHE_SIZE", "SERVICE_HYBRID_TIMEOUT"}},
		{"settings without the URL", func(c *Config) { c.Auth.Hybrid.CacheTTL = time.Second }, []string{"SERVICE_HYBRID_REMOTE_URL is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Defaults()
			tt.edit(&c)
			err := c.Validate()
			if len(tt.wantErrs) == 0 {
				if err != nil {
					t.Errorf("got %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got nil, want errors containing %q", tt.wantErrs)
			}
			for _, want := range tt.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("got %q, want it to contain %q", err, want)
				}
			}
		})
	}
}
