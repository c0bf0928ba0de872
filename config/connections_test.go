package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConnectionsSettings(t *testing.T) {
	const key, other = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", "HxoZGBcWFRQTEhEQDw4NDAsKCQgHBgUEAwIBAB8eHR0"
	tests := []struct {
		name string
		set  func(*Connections)
		want string // "" valid, else a part of the error
	}{
		{"defaults", func(*Connections) {}, ""},
		{"a key", func(c *Connections) { c.Key = key }, ""},
		{"a key, padded", func(c *Connections) { c.Key = key + "=" }, ""},
		{"rotation", func(c *Connections) { c.Key, c.PreviousKey = other, key }, ""},
		{"a short key", func(c *Connections) { c.Key = "c2hvcnQ" }, "gateway.connections.keyFile / SERVICE_GATEWAY_CONNECTIONS_KEY_FILE"},
		{"not base64url", func(c *Connections) { c.Key = strings.Repeat("!", 43) }, "gateway.connections.keyFile"},
		{"a previous key alone", func(c *Connections) { c.PreviousKey = key }, "gateway.connections.previousKeyFile"},
		{"a bad previous key", func(c *Connections) { c.Key, c.PreviousKey = key, "x" }, "gateway.connections.previousKeyFile"},
		{"refreshBefore too short", func(c *Connections) { c.RefreshBefore = time.Millisecond }, "gateway.connections.refreshBefore"},
		{"refreshBefore too long", func(c *Connections) { c.RefreshBefore = 2 * time.Hour }, "gateway.connections.refreshBefore"},
	}
	for _, tt := range tests {
		c := Defaults()
		tt.set(&c.Gateway.Connections)
		err := c.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want an error naming %s", tt.name, err, tt.want)
		}
	}

	// The key comes from its file, by the rules of every secret file.
	dir := t.TempDir()
	file := filepath.Join(dir, "connections.key")
	if err := os.WriteFile(file, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Resolve("", map[string]string{"SERVICE_GATEWAY_CONNECTIONS_KEY_FILE": file}, nil)
	if err != nil || c.Gateway.Connections.Key != key {
		t.Fatalf("Resolve with the key file: %q, %v", c.Gateway.Connections.Key, err)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve("", map[string]string{"SERVICE_GATEWAY_CONNECTIONS_KEY_FILE": file}, nil); err == nil || !strings.Contains(err.Error(), "gateway.connections.keyFile") {
		t.Errorf("a key file others may read: %v, want an error naming gateway.connections.keyFile", err)
	}
}
