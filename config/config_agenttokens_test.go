package config

import (
	"strings"
	"testing"
	"time"
)

func TestAgentTokenSettings(t *testing.T) {
	tests := []struct {
		name string
		set  func(*AgentTokens)
		want string // "" valid, else a part of the error
	}{
		{"defaults", func(*AgentTokens) {}, ""},
		{"issuer", func(a *AgentTokens) { a.Issuer = "https://agentauth.example.com" }, ""},
		{"issuer not a URL", func(a *AgentTokens) { a.Issuer = "agentauth" }, "auth.agentTokens.issuer / SERVICE_AGENT_TOKENS_ISSUER / --agent-tokens-issuer"},
		{"issuer with a query", func(a *AgentTokens) { a.Issuer = "https://a.example.com/?x=1" }, "auth.agentTokens.issuer"},
		{"maxTTL too long", func(a *AgentTokens) { a.MaxTTL = 25 * time.Hour }, "auth.agentTokens.maxTTL"},
		{"rotation", func(a *AgentTokens) { a.PreviousKeyFile, a.PreviousKeyUntil = "/k", "2026-12-01T00:00:00Z" }, ""},
		{"previous key without until", func(a *AgentTokens) { a.PreviousKeyFile = "/k" }, "auth.agentTokens.previousKeyUntil"},
		{"until without key", func(a *AgentTokens) { a.PreviousKeyUntil = "2026-12-01T00:00:00Z" }, "auth.agentTokens.previousKeyFile"},
		{"until not a time", func(a *AgentTokens) { a.PreviousKeyFile, a.PreviousKeyUntil = "/k", "tomorrow" }, "RFC 3339"},
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
	if got := Defaults().TokenIssuer(); got != "http://127.0.0.1:8080" {
		t.Errorf("default issuer %q", got)
	}
}
