package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAgentTokenSettings(t *testing.T) {
	const seed = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
	tests := []struct {
		name string
		set  func(*AgentTokens)
		want string // "" valid, else a part of the error
	}{
		{"defaults", func(*AgentTokens) {}, ""},
		{"issuer", func(a *AgentTokens) { a.Issuer = "https://agentauth.example.com" }, ""},
		{"issuer not a URL", func(a *AgentTokens) { a.Issuer = "agentauth" }, "auth.agentTokens.issuer / SERVICE_AGENT_TOKENS_ISSUER / --agent-tokens-issuer"},
		{"issuer with a query", func(a *AgentTokens) { a.Issuer = "https://a.example.com/?x=1" }, "auth.agentTokens.issuer"},
		{"signing key not a seed", func(a *AgentTokens) { a.SigningKey = "short" }, "auth.agentTokens.signingKeyFile"},
		{"maxTTL too long", func(a *AgentTokens) { a.MaxTTL = 25 * time.Hour }, "auth.agentTokens.maxTTL"},
		{"rotation", func(a *AgentTokens) { a.PreviousKey, a.PreviousKeyUntil = seed, "2026-12-01T00:00:00Z" }, ""},
		{"previous key without until", func(a *AgentTokens) { a.PreviousKey = seed }, "auth.agentTokens.previousKeyUntil"},
		{"until without key", func(a *AgentTokens) { a.PreviousKeyUntil = "2026-12-01T00:00:00Z" }, "auth.agentTokens.previousKeyFile"},
		{"until not a time", func(a *AgentTokens) { a.PreviousKey, a.PreviousKeyUntil = seed, "tomorrow" }, "RFC 3339"},
		{"issuer with a path but no base path", func(a *AgentTokens) { a.Issuer = "https://gw.example.com/agentauth" }, "the issuer's path must be the base path"},
		{"no rate limit", func(a *AgentTokens) { a.RateLimit = 0 }, "auth.agentTokens.rateLimit"},
		{"no sub-agents", func(a *AgentTokens) { a.MaxSubAgents = 0 }, "auth.agentTokens.maxSubAgents"},
	}
	for _, tt := range tests {
		c := Defaults()
		tt.set(&c.Auth.AgentTokens)
		err := c.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want an error naming %s", tt.name, err, tt.want)
		}
	}
	issuers := []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"defaults: the API", func(*Config) {}, "http://127.0.0.1:8080"},
		{"the public listener", func(c *Config) { c.Server.PublicPort = 9443 }, "http://127.0.0.1:9443"},
		{"the public listener with its host and a base path", func(c *Config) {
			c.Server.PublicPort, c.Server.PublicHost, c.Server.BasePath = 9443, "0.0.0.0", "/agentauth"
		}, "http://0.0.0.0:9443/agentauth"},
		{"configured", func(c *Config) {
			c.Server.PublicPort, c.Server.BasePath, c.Auth.AgentTokens.Issuer = 9443, "/agentauth", "https://gw.example.com/agentauth"
		}, "https://gw.example.com/agentauth"},
	}
	for _, tt := range issuers {
		c := Defaults()
		tt.set(&c)
		if got := c.TokenIssuer(); got != tt.want {
			t.Errorf("%s: issuer %q, want %q", tt.name, got, tt.want)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	c := Defaults()
	c.Server.PublicPort = c.Server.Port
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "server.publicPort") {
		t.Errorf("public port = API port: %v, want an error naming server.publicPort", err)
	}
}

// TestAgentTokenKeyFiles: the key files follow the rules of every secret
// file (owner-only, read at load, not both the file and the variable).
func TestAgentTokenKeyFiles(t *testing.T) {
	const seed = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
	dir := t.TempDir()
	good, open := filepath.Join(dir, "k"), filepath.Join(dir, "open")
	if err := os.WriteFile(good, []byte(seed+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(open, []byte(seed), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		want string // "" valid
	}{
		{"file", map[string]string{"SERVICE_AGENT_TOKENS_SIGNING_KEY_FILE": good}, ""},
		{"file others may read", map[string]string{"SERVICE_AGENT_TOKENS_SIGNING_KEY_FILE": open}, "chmod 600"},
		{"file and variable", map[string]string{"SERVICE_AGENT_TOKENS_SIGNING_KEY_FILE": good, "SERVICE_AGENT_TOKENS_SIGNING_KEY": seed}, "both set"},
		{"previous key file", map[string]string{"SERVICE_AGENT_TOKENS_PREVIOUS_KEY_FILE": good, "SERVICE_AGENT_TOKENS_PREVIOUS_KEY_UNTIL": "2026-12-01T00:00:00Z"}, ""},
	}
	for _, tt := range tests {
		tt.env["SERVICE_DATA_DIR"] = dir
		c, err := Resolve("", tt.env, nil)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want == "" && c.Auth.AgentTokens.SigningKey != seed && c.Auth.AgentTokens.PreviousKey != seed:
			t.Errorf("%s: the key was not read", tt.name)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
