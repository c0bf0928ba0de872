package config

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agentauth.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPrecedenceDefaultsFileEnv(t *testing.T) {
	file := writeFile(t, `
server:
  host: 127.0.0.2
  port: 9000
dataDir: /from/file
auth:
  oidc:
    clientId: from-file
    issuer: https://idp.example/realms/file
`)
	tests := []struct {
		name    string
		path    string
		env     map[string]string
		check   func(Config) string
		wantVal string
	}{
		{"default port", "", nil, func(c Config) string { return strconv.Itoa(c.Server.Port) }, "8080"},
		{"default host", "", nil, func(c Config) string { return c.Server.Host }, "127.0.0.1"},
		{"default shutdown timeout", "", nil, func(c Config) string { return c.Server.ShutdownTimeout.String() }, "30s"},
		{"XDG data dir", "", map[string]string{"XDG_DATA_HOME": "/xdg"}, func(c Config) string { return c.DataDir }, defaultDataDirFor(map[string]string{"XDG_DATA_HOME": "/xdg"})},
		{"file beats default", file, nil, func(c Config) string { return strconv.Itoa(c.Server.Port) }, "9000"},
		{"file nested key", file, nil, func(c Config) string { return c.Auth.OIDC.ClientID }, "from-file"},
		{"env beats file", file, map[string]string{"SERVICE_PORT": "9100"}, func(c Config) string { return strconv.Itoa(c.Server.Port) }, "9100"},
		{"env beats file for a nested key", file, map[string]string{"SERVICE_OIDC_CLIENT_ID": "from-env"}, func(c Config) string { return c.Auth.OIDC.ClientID }, "from-env"},
		{"unset env keeps the file value", file, map[string]string{"SERVICE_PORT": "9100"}, func(c Config) string { return c.Server.Host }, "127.0.0.2"},
		{"env without file", "", map[string]string{"SERVICE_DATA_DIR": "/from/env"}, func(c Config) string { return c.DataDir }, "/from/env"},
		{"env bool", "", map[string]string{"SERVICE_AUTH_DEBUG": "true"}, func(c Config) string { return string(c.Mode()) }, "debug"},
		{"env duration", "", map[string]string{"SERVICE_SHUTDOWN_TIMEOUT": "5s"}, func(c Config) string { return c.Server.ShutdownTimeout.String() }, "5s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if v, ok := tt.env["XDG_DATA_HOME"]; ok {
				t.Setenv("XDG_DATA_HOME", v)
			}
			c, err := Load(tt.path, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.check(c); got != tt.wantVal {
				t.Errorf("got %q, want %q", got, tt.wantVal)
			}
		})
	}
}

func defaultDataDirFor(env map[string]string) string {
	return filepath.Join(env["XDG_DATA_HOME"], "agentauth")
}

func TestLoadErrorsNameTheSetting(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		env   map[string]string
		wants []string
	}{
		{"bad env int", "", map[string]string{"SERVICE_PORT": "eighty"}, []string{"SERVICE_PORT", "eighty"}},
		{"bad env bool", "", map[string]string{"SERVICE_AUTH_DEBUG": "yes please"}, []string{"SERVICE_AUTH_DEBUG"}},
		{"bad env duration", "", map[string]string{"SERVICE_SHUTDOWN_TIMEOUT": "soon"}, []string{"SERVICE_SHUTDOWN_TIMEOUT"}},
		{"unknown file key", "server:\n  hots: 0.0.0.0\n", nil, []string{"hots"}},
		{"api key in file", "auth:\n  apiKey: secret-secret-secret\n", nil, []string{"apiKey"}},
		{"bad file type", "server:\n  port: many\n", nil, []string{"line 2", "many"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.file != "" {
				path = writeFile(t, tt.file)
			}
			_, err := Load(path, tt.env)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml"), nil); err == nil || !strings.Contains(err.Error(), "SERVICE_CONFIG") {
		t.Errorf("missing file: err = %v, want one naming --config / SERVICE_CONFIG", err)
	}
}

func TestEmptyFileSetsNothing(t *testing.T) {
	c, err := Load(writeFile(t, ""), nil)
	if err != nil || c.Server.Port != 8080 {
		t.Errorf("empty file: port %d, err %v; want defaults", c.Server.Port, err)
	}
}

func TestValidate(t *testing.T) {
	valid := Defaults()
	valid.DataDir = "/data"
	tests := []struct {
		name   string
		mutate func(*Config)
		wants  []string // substrings of the error; none: valid
	}{
		{"defaults", func(*Config) {}, nil},
		{"port 0 picks a free port", func(c *Config) { c.Server.Port = 0 }, nil},
		{"port out of range", func(c *Config) { c.Server.Port = 70000 }, []string{"SERVICE_PORT"}},
		{"empty host", func(c *Config) { c.Server.Host = "" }, []string{"SERVICE_HOST"}},
		{"empty data dir", func(c *Config) { c.DataDir = "" }, []string{"SERVICE_DATA_DIR"}},
		{"bad log level", func(c *Config) { c.Log.Level = "loud" }, []string{"SERVICE_LOG_LEVEL"}},
		{"bad shutdown timeout", func(c *Config) { c.Server.ShutdownTimeout = -time.Second }, []string{"SERVICE_SHUTDOWN_TIMEOUT"}},
		{"debug on loopback", func(c *Config) { c.Auth.Debug = true }, nil},
		{"debug on localhost", func(c *Config) { c.Auth.Debug = true; c.Server.Host = "localhost" }, nil},
		{"debug on ::1", func(c *Config) { c.Auth.Debug = true; c.Server.Host = "::1" }, nil},
		{"debug on all interfaces", func(c *Config) { c.Auth.Debug = true; c.Server.Host = "0.0.0.0" }, []string{"SERVICE_AUTH_DEBUG", "loopback", "0.0.0.0"}},
		{"debug with an API key", func(c *Config) { c.Auth.Debug = true; c.Auth.APIKey = "0123456789abcdef" }, []string{"SERVICE_AUTH_DEBUG", "SERVICE_API_KEY"}},
		{"short API key", func(c *Config) { c.Auth.APIKey = "short" }, []string{"SERVICE_API_KEY", "16"}},
		{"API key a Bearer header cannot carry", func(c *Config) { c.Auth.APIKey = "correct horse battery staple" }, []string{"SERVICE_API_KEY", "RFC 6750"}},
		{"API key with a no-break space", func(c *Config) { c.Auth.APIKey = "0123456789abcdef\u00a0" }, []string{"SERVICE_API_KEY", "RFC 6750"}},
		{"API key of every b64token character", func(c *Config) { c.Auth.APIKey = "aZ09-._~+/0123456789==" }, nil},
		{"bad custom role", func(c *Config) { c.Auth.Roles = []CustomRole{{Name: "ops"}} }, []string{"auth.roles"}},
		{"every problem at once", func(c *Config) { c.Server.Port = -1; c.Log.Level = "x"; c.DataDir = "" }, []string{"SERVICE_PORT", "SERVICE_LOG_LEVEL", "SERVICE_DATA_DIR"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid
			tt.mutate(&c)
			err := c.Validate()
			if len(tt.wants) == 0 {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestModeAndAuthorizer(t *testing.T) {
	tests := []struct {
		mutate func(*Config)
		want   Mode
	}{
		{func(*Config) {}, ModeLocal},
		{func(c *Config) { c.Auth.APIKey = "k" }, ModeAPIKey},
		{func(c *Config) { c.Auth.Debug = true }, ModeDebug},
		{func(c *Config) { c.Auth.OIDC.Enabled = true; c.Auth.APIKey = "k" }, ModeOIDC},
	}
	for _, tt := range tests {
		c := Defaults()
		tt.mutate(&c)
		if got := c.Mode(); got != tt.want {
			t.Errorf("Mode() = %s, want %s", got, tt.want)
		}
	}
	c := Defaults()
	c.Auth.Roles = []CustomRole{{Name: "SRE", Extends: "user", Permissions: []string{"metrics:read"}}}
	a, err := c.Authorizer()
	if err != nil {
		t.Fatal(err)
	}
	if !a.Decide([]domain.Role{"SRE"}, "metrics:read").Allowed || !a.Decide([]domain.Role{"SRE"}, "sessions:read").Allowed {
		t.Error("custom role SRE extending user should grant metrics:read and sessions:read")
	}
}
