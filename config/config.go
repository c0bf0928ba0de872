// Package config reads agentauth's settings once, at start: defaults set in
// code, then the YAML file (--config / SERVICE_CONFIG), then environment
// variables, then command-line flags, each overriding the one before. The
// result is validated as a whole, and every problem is reported together,
// naming the setting to fix.
package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// Config is every setting of the service. The yaml tags are the config-file
// keys; the env tags the environment variables.
type Config struct {
	Server    Server    `yaml:"server"`
	DataDir   string    `yaml:"dataDir" env:"SERVICE_DATA_DIR"`
	Log       Log       `yaml:"log"`
	Auth      Auth      `yaml:"auth"`
	Database  Database  `yaml:"database"`
	Audit     Audit     `yaml:"audit"`
	Gateway   Gateway   `yaml:"gateway"`
	Approvals Approvals `yaml:"approvals"`
}

// Audit tunes the audit log's writer.
type Audit struct {
	// BatchWait: under load, how long the writer waits to gather a bigger
	// batch before one sync commits it.
	BatchWait time.Duration `yaml:"batchWait" env:"SERVICE_AUDIT_BATCH_WAIT"`
	// SigningKeyFile holds the Ed25519 seed checkpoints are signed with
	// (read into SigningKey at load, by the rules of every secret file);
	// neither set: {dataDir}/secrets/audit-signing.key, created on first
	// start.
	SigningKeyFile string `yaml:"signingKeyFile" env:"SERVICE_AUDIT_SIGNING_KEY_FILE"`
	// SigningKey is the seed itself, a secret: environment only (a
	// Kubernetes secretKeyRef), never the config file.
	SigningKey string `yaml:"-" env:"SERVICE_AUDIT_SIGNING_KEY"`
	// CheckpointEvery and CheckpointInterval: a signed checkpoint every
	// that many records or that long, whichever comes first.
	CheckpointEvery    int64         `yaml:"checkpointEvery" env:"SERVICE_AUDIT_CHECKPOINT_EVERY"`
	CheckpointInterval time.Duration `yaml:"checkpointInterval" env:"SERVICE_AUDIT_CHECKPOINT_INTERVAL"`
	// RecoveryGrace: how old a change committed without its audit record
	// must be before recovery records it (see recovery.go).
	RecoveryGrace time.Duration `yaml:"recoveryGrace" env:"SERVICE_AUDIT_RECOVERY_GRACE"`
	// Retention: how long records are kept ("90d", "2160h"; "off" or
	// empty: for ever). See RetentionPeriod.
	Retention string `yaml:"retention" env:"SERVICE_AUDIT_RETENTION"`
	// Archive: records past retention go to compressed NDJSON archives
	// first (true) or are dropped (false).
	Archive bool `yaml:"archive" env:"SERVICE_AUDIT_ARCHIVE"`
	// RedactQueryParams are query parameters, besides the built-in
	// credential names, whose values records replace by a keyed hash.
	RedactQueryParams []string `yaml:"redactQueryParams" env:"SERVICE_AUDIT_REDACT_QUERY_PARAMS" envSeparator:","`
}

// RetentionPeriod parses Retention: whole days ("90d") or a Go duration,
// at least a day; 0 when off.
func (a Audit) RetentionPeriod() (time.Duration, error) {
	v := strings.TrimSpace(a.Retention)
	if v == "" || v == "off" {
		return 0, nil
	}
	var (
		d   time.Duration
		err error
	)
	if days, ok := strings.CutSuffix(v, "d"); ok {
		var n int
		if n, err = strconv.Atoi(days); err == nil {
			d = time.Duration(n) * 24 * time.Hour
		}
	} else {
		d, err = time.ParseDuration(v)
	}
	if err != nil || d < 24*time.Hour {
		return 0, fmt.Errorf("%q is not off or a period of at least one day such as 90d", a.Retention)
	}
	return d, nil
}

// Server is the HTTP listener.
type Server struct {
	Host            string        `yaml:"host" env:"SERVICE_HOST"`
	Port            int           `yaml:"port" env:"SERVICE_PORT"`
	ShutdownTimeout time.Duration `yaml:"shutdownTimeout" env:"SERVICE_SHUTDOWN_TIMEOUT"`
	// BasePath is the path prefix every route is served under (a
	// deployment at https://host/agentauth); empty: the root.
	BasePath string `yaml:"basePath" env:"SERVICE_BASE_PATH"`
	// TrustedProxies are the CIDRs of the proxies whose X-Forwarded-For is
	// believed (see TrustedProxies).
	TrustedProxies []string `yaml:"trustedProxies" env:"SERVICE_TRUSTED_PROXIES" envSeparator:","`
	// ManagementPort turns on the management listener (probes and metrics
	// without credentials); 0 leaves it off.
	ManagementPort int `yaml:"managementPort" env:"SERVICE_MANAGEMENT_PORT"`
	// ManagementHost is its address; empty: Host.
	ManagementHost string `yaml:"managementHost" env:"SERVICE_MANAGEMENT_HOST"`
	// PublicPort turns on the public listener (agent-token discovery
	// without credentials, and the OAuth endpoints); 0 leaves it off.
	PublicPort int `yaml:"publicPort" env:"SERVICE_PUBLIC_PORT"`
	// PublicHost is its address; empty: Host.
	PublicHost string `yaml:"publicHost" env:"SERVICE_PUBLIC_HOST"`
}

// Log is the process log (not the audit log).
type Log struct {
	Level string `yaml:"level" env:"SERVICE_LOG_LEVEL"`
}

// Auth selects and configures the authentication mode.
type Auth struct {
	// APIKey is a secret: environment or flag only, never the config file.
	APIKey string `yaml:"-" env:"SERVICE_API_KEY"`
	// APIKeyFile holds the API key instead (an owner-only file).
	APIKeyFile  string       `yaml:"apiKeyFile" env:"SERVICE_API_KEY_FILE"`
	Debug       bool         `yaml:"debug" env:"SERVICE_AUTH_DEBUG"`
	OIDC        OIDC         `yaml:"oidc"`
	Hybrid      Hybrid       `yaml:"hybrid"`
	Roles       []CustomRole `yaml:"roles"`
	Keys        []RoleKey    `yaml:"keys"`
	AgentTokens AgentTokens  `yaml:"agentTokens"`
	APIKeys     APIKeys      `yaml:"apiKeys"`
}

// AgentTokens configures the agent credentials tool servers verify.
type AgentTokens struct {
	// Issuer is the iss of every token: agentauth's public URL; empty:
	// http://{server.host}:{server.port}.
	Issuer string `yaml:"issuer" env:"SERVICE_AGENT_TOKENS_ISSUER"`
	// SigningKeyFile holds the Ed25519 seed tokens are signed with (read
	// into SigningKey at load, by the rules of every secret file); empty
	// and no SigningKey: {dataDir}/secrets/agent-token-signing.key,
	// created on first start.
	SigningKeyFile string `yaml:"signingKeyFile" env:"SERVICE_AGENT_TOKENS_SIGNING_KEY_FILE"`
	// SigningKey is the seed itself, a secret: environment only.
	SigningKey string `yaml:"-" env:"SERVICE_AGENT_TOKENS_SIGNING_KEY"`
	// PreviousKeyFile is the key rotated out (read into PreviousKey), still
	// verifying until PreviousKeyUntil (RFC 3339).
	PreviousKeyFile  string `yaml:"previousKeyFile" env:"SERVICE_AGENT_TOKENS_PREVIOUS_KEY_FILE"`
	PreviousKey      string `yaml:"-" env:"SERVICE_AGENT_TOKENS_PREVIOUS_KEY"`
	PreviousKeyUntil string `yaml:"previousKeyUntil" env:"SERVICE_AGENT_TOKENS_PREVIOUS_KEY_UNTIL"`
	// MaxTTL is the longest lifetime of a token, and the default.
	MaxTTL time.Duration `yaml:"maxTTL" env:"SERVICE_AGENT_TOKENS_MAX_TTL"`
	// RateLimit is how many requests one caller may make per minute to
	// /oauth2/token and to /oauth2/introspect.
	RateLimit int `yaml:"rateLimit" env:"SERVICE_AGENT_TOKENS_RATE_LIMIT"`
	// MaxSubAgents bounds the sub-agents of one session.
	MaxSubAgents int `yaml:"maxSubAgents" env:"SERVICE_AGENT_TOKENS_MAX_SUB_AGENTS"`
}

// TokenIssuer is auth.agentTokens.issuer; unset, the public listener's
// URL (else the API's) with the base path.
func (c Config) TokenIssuer() string {
	if c.Auth.AgentTokens.Issuer != "" {
		return c.Auth.AgentTokens.Issuer
	}
	if c.Server.PublicPort != 0 {
		return "http://" + c.PublicAddr() + c.Server.BasePath
	}
	return "http://" + c.Addr() + c.Server.BasePath
}

// PublicAddr is host:port of the public listener; empty when off.
func (c Config) PublicAddr() string {
	if c.Server.PublicPort == 0 {
		return ""
	}
	host := c.Server.PublicHost
	if host == "" {
		host = c.Server.Host
	}
	return net.JoinHostPort(host, fmt.Sprint(c.Server.PublicPort))
}

// PreviousUntil parses auth.agentTokens.previousKeyUntil; zero when unset.
func (a AgentTokens) PreviousUntil() (time.Time, error) {
	if a.PreviousKeyUntil == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339, a.PreviousKeyUntil)
}

// validate checks the agent-token settings.
func (a AgentTokens) validate() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if a.Issuer != "" {
		u, err := url.Parse(a.Issuer)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			bad("%s: %q is not an http(s) URL without query or fragment", names("auth.agentTokens.issuer"), a.Issuer)
		}
	}
	if a.MaxTTL < time.Second || a.MaxTTL > 24*time.Hour {
		bad("%s: %v is outside 1s to 24h", names("auth.agentTokens.maxTTL"), a.MaxTTL)
	}
	if a.RateLimit < 1 {
		bad("%s: %d is not a whole number of at least 1", names("auth.agentTokens.rateLimit"), a.RateLimit)
	}
	if a.MaxSubAgents < 1 || a.MaxSubAgents > 100_000 {
		bad("%s: %d is outside 1 to 100000", names("auth.agentTokens.maxSubAgents"), a.MaxSubAgents)
	}
	for _, k := range []struct{ seed, setting string }{{a.SigningKey, "auth.agentTokens.signingKeyFile"}, {a.PreviousKey, "auth.agentTokens.previousKeyFile"}} {
		if k.seed != "" && !validSeed(k.seed) {
			bad("%s: want a 32-byte Ed25519 seed in base64url (as `head -c 32 /dev/urandom | basenc --base64url` writes it)", names(k.setting))
		}
	}
	until, err := a.PreviousUntil()
	switch {
	case err != nil:
		bad("%s: %q is not an RFC 3339 time such as 2026-12-01T00:00:00Z", names("auth.agentTokens.previousKeyUntil"), a.PreviousKeyUntil)
	case a.PreviousKey != "" && until.IsZero():
		bad("%s: must be set with auth.agentTokens.previousKeyFile (when the previous key stops verifying)", names("auth.agentTokens.previousKeyUntil"))
	case a.PreviousKey == "" && !until.IsZero():
		bad("%s: must be set with auth.agentTokens.previousKeyUntil", names("auth.agentTokens.previousKeyFile"))
	}
	return errs
}

// CustomRole defines a role in configuration (auth.roles[]).
type CustomRole struct {
	Name        string   `yaml:"name"`
	Extends     string   `yaml:"extends"`
	Permissions []string `yaml:"permissions"`
}

// Database selects the store. Empty URL: the embedded SQLite file.
type Database struct {
	URL string `yaml:"url" env:"SERVICE_DATABASE_URL"`
	// URLFile holds the URL instead (an owner-only file): the URL carries
	// the database password.
	URLFile string `yaml:"urlFile" env:"SERVICE_DATABASE_URL_FILE"`
}

// Defaults returns the settings in force when nothing is configured.
func Defaults() Config {
	return Config{
		Server:  Server{Host: "127.0.0.1", Port: 8080, ShutdownTimeout: 30 * time.Second},
		DataDir: defaultDataDir(),
		Log:     Log{Level: "info"},
		Auth: Auth{AgentTokens: AgentTokens{MaxTTL: 15 * time.Minute, RateLimit: 600, MaxSubAgents: 256},
			APIKeys: APIKeys{MaxTTL: defaultAPIKeysMaxTTL, MaxPerOwner: defaultAPIKeysMaxPerOwner},
			OIDC:    defaultOIDC(), Hybrid: defaultHybrid()},
		Audit:   Audit{BatchWait: 500 * time.Microsecond, CheckpointEvery: 10_000, CheckpointInterval: time.Minute, Archive: true, RecoveryGrace: DefaultRecoveryGrace},
		Gateway: defaultGateway(),
	}
}

// defaultDataDir is $XDG_DATA_HOME/agentauth, else ~/.local/share/agentauth.
func defaultDataDir() string {
	if xdg := os.Getenv("XDG_DATA_HOME"); xdg != "" {
		return filepath.Join(xdg, "agentauth")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "agentauth")
	}
	return filepath.Join(".", "agentauth-data")
}

// Mode is the authentication mode, derived from the settings.
type Mode string

// The modes of the specification.
const (
	ModeLocal  Mode = "local"
	ModeAPIKey Mode = "apikey"
	ModeDebug  Mode = "debug"
	ModeOIDC   Mode = "oidc"
	ModeHybrid Mode = "hybrid"
)

// Mode says which authentication mode the settings select.
func (c Config) Mode() Mode {
	switch {
	case c.Auth.Hybrid.Enabled():
		return ModeHybrid
	case c.Auth.OIDC.Enabled:
		return ModeOIDC
	case c.Auth.Debug:
		return ModeDebug
	case c.Auth.APIKey != "":
		return ModeAPIKey
	}
	return ModeLocal
}

// Addr is the listen address.
func (c Config) Addr() string { return net.JoinHostPort(c.Server.Host, fmt.Sprint(c.Server.Port)) }

// ManagementAddr is the management listener's address; empty when it is off.
func (c Config) ManagementAddr() string {
	if c.Server.ManagementPort == 0 {
		return ""
	}
	host := c.Server.ManagementHost
	if host == "" {
		host = c.Server.Host
	}
	return net.JoinHostPort(host, fmt.Sprint(c.Server.ManagementPort))
}

// Validate checks every setting and reports all problems at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Server.Host == "" {
		bad("%s: must not be empty", names("server.host"))
	}
	if c.Server.Port < 0 || c.Server.Port > 65535 {
		bad("%s: %d is not a port number (1-65535, or 0 for any free port)", names("server.port"), c.Server.Port)
	}
	if c.Server.ManagementPort < 0 || c.Server.ManagementPort > 65535 {
		bad("%s: %d is not a port number (1-65535, or 0 to leave the management listener off)", names("server.managementPort"), c.Server.ManagementPort)
	} else if c.Server.ManagementPort != 0 && c.Server.ManagementPort == c.Server.Port && c.ManagementAddr() == c.Addr() {
		bad("%s: %d is the API port; pick another", names("server.managementPort"), c.Server.ManagementPort)
	}
	if c.Server.PublicPort < 0 || c.Server.PublicPort > 65535 {
		bad("%s: %d is not a port number (1-65535, or 0 to leave the public listener off)", names("server.publicPort"), c.Server.PublicPort)
	} else if c.Server.PublicPort != 0 && (c.PublicAddr() == c.Addr() || c.PublicAddr() == c.ManagementAddr()) {
		bad("%s: %d is the API or the management port; pick another", names("server.publicPort"), c.Server.PublicPort)
	}
	if iss := c.Auth.AgentTokens.Issuer; iss != "" {
		if u, err := url.Parse(iss); err == nil && strings.TrimSuffix(u.Path, "/") != c.Server.BasePath {
			bad("%s: %q has the path %q, but server.basePath is %q: the issuer's path must be the base path (the public listener serves the metadata at /.well-known/oauth-authorization-server<base path> and the endpoints under it)",
				names("auth.agentTokens.issuer"), iss, u.Path, c.Server.BasePath)
		}
	}
	if c.Server.ShutdownTimeout <= 0 {
		bad("%s: must be a positive duration such as 30s", names("server.shutdownTimeout"))
	}
	if _, err := c.TrustedProxies(); err != nil {
		errs = append(errs, err)
	}
	if bp := c.Server.BasePath; bp != "" && !validBasePath(bp) {
		bad("%s: %q: want a path such as /agentauth (a leading slash, no trailing slash, letters, digits and - . _ ~ between slashes)", names("server.basePath"), bp)
	}
	if c.Audit.BatchWait < 0 || c.Audit.BatchWait > 10*time.Millisecond {
		bad("audit.batchWait / SERVICE_AUDIT_BATCH_WAIT: %v is outside 0 to 10ms", c.Audit.BatchWait)
	}
	if c.Audit.SigningKey != "" && !validSeed(c.Audit.SigningKey) {
		bad("SERVICE_AUDIT_SIGNING_KEY / audit.signingKeyFile: want a 32-byte Ed25519 seed in base64url (43 characters)")
	}
	if c.Audit.CheckpointEvery < 1 {
		bad("audit.checkpointEvery / SERVICE_AUDIT_CHECKPOINT_EVERY: %d must be at least 1 (records between signed checkpoints)", c.Audit.CheckpointEvery)
	}
	if c.Audit.CheckpointInterval < time.Second {
		bad("audit.checkpointInterval / SERVICE_AUDIT_CHECKPOINT_INTERVAL: %v must be at least 1s", c.Audit.CheckpointInterval)
	}
	if _, err := c.Audit.RetentionPeriod(); err != nil {
		bad("audit.retention / SERVICE_AUDIT_RETENTION / --audit-retention: %v", err)
	}
	if c.Audit.RecoveryGrace <= 0 {
		bad("audit.recoveryGrace / SERVICE_AUDIT_RECOVERY_GRACE: %v must be a positive duration such as 5m", c.Audit.RecoveryGrace)
	}
	if c.DataDir == "" {
		bad("%s: must not be empty", names("dataDir"))
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		bad("%s: %q is not one of debug, info, warn, error", names("log.level"), c.Log.Level)
	}
	if c.Auth.Debug {
		if c.Auth.APIKey != "" || c.Auth.OIDC.Enabled {
			bad("SERVICE_AUTH_DEBUG=true replaces real identity checking and cannot be combined with SERVICE_API_KEY or OIDC: turn one off")
		}
		if !IsLoopback(c.Server.Host) {
			bad("SERVICE_AUTH_DEBUG=true is for local development only and needs a loopback SERVICE_HOST (127.0.0.1, ::1 or localhost), not %q", c.Server.Host)
		}
	}
	if c.Auth.APIKey != "" && len(c.Auth.APIKey) < domain.MinAPIKeyLength {
		bad("SERVICE_API_KEY / --api-key: must have at least %d characters", domain.MinAPIKeyLength)
	}
	if c.Auth.APIKey != "" && !domain.IsBearerToken(c.Auth.APIKey) {
		bad("SERVICE_API_KEY / --api-key: %s", errKeySyntax)
	}
	if _, err := c.Authorizer(); err != nil {
		bad("auth.roles: %v", err)
	}
	for _, n := range c.Audit.RedactQueryParams {
		if strings.TrimSpace(n) == "" {
			bad("%s: a parameter name is empty", names("audit.redactQueryParams"))
			break
		}
	}
	errs = append(errs, c.Auth.AgentTokens.validate()...)
	errs = append(errs, c.validateAPIKeys()...)
	errs = append(errs, c.validateAccess()...)
	errs = append(errs, c.validateOIDC()...)
	errs = append(errs, c.validateSessions()...)
	errs = append(errs, c.validateHybrid()...)
	errs = append(errs, c.validateDatabase()...)
	errs = append(errs, c.validateGateway()...)
	errs = append(errs, c.validateApprovals()...)
	return errors.Join(errs...)
}

// errKeySyntax says why a key with other characters is refused: no
// request could present it.
const errKeySyntax = "may hold only letters, digits and - . _ ~ + / (then = padding): a key of other characters cannot be sent as a Bearer credential (RFC 6750)"

// Authorizer builds the role table from the built-in matrix and auth.roles.
func (c Config) Authorizer() (*domain.Authorizer, error) {
	custom := make([]domain.CustomRole, 0, len(c.Auth.Roles))
	for _, r := range c.Auth.Roles {
		perms := make([]domain.Permission, len(r.Permissions))
		for i, p := range r.Permissions {
			perms[i] = domain.Permission(p)
		}
		custom = append(custom, domain.CustomRole{Name: domain.Role(r.Name), Extends: domain.Role(strings.ToUpper(r.Extends)), Permissions: perms})
	}
	return domain.NewAuthorizer(custom)
}

// IsLoopback reports whether host names only this machine.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validSeed tells whether s is a 32-byte seed in base64url (the form
// auditsign.ParseSeed reads; config does not import the adapter).
func validSeed(s string) bool {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(strings.TrimSpace(s), "="))
	return err == nil && len(b) == 32
}

// validBasePath accepts /seg[/seg...] with unreserved URL characters.
func validBasePath(p string) bool {
	if len(p) < 2 || p[0] != '/' || strings.HasSuffix(p, "/") || strings.Contains(p, "//") {
		return false
	}
	for _, r := range p {
		if !(r == '/' || r == '-' || r == '.' || r == '_' || r == '~' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}
