package config

import (
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// OIDC is the OpenID Connect client (auth.oidc.*).
type OIDC struct {
	Enabled bool   `yaml:"enabled" env:"SERVICE_OIDC_ENABLED"`
	Issuer  string `yaml:"issuer" env:"SERVICE_OIDC_ISSUER"`
	// DiscoveryURL is where the service itself reaches the provider
	// (discovery, keys, token, logout, introspection) when that is not the
	// public issuer tokens carry: an internal cluster URL. Empty: Issuer.
	DiscoveryURL string `yaml:"discoveryUrl" env:"SERVICE_OIDC_DISCOVERY_URL"`
	// AdditionalIssuers are further issuers (another realm, say for
	// machine clients) whose access tokens are accepted as Bearer tokens;
	// logins stay on Issuer. Config file only.
	AdditionalIssuers []TrustedIssuer `yaml:"additionalIssuers"`
	// Provider is "keycloak" (the default: the issuer must be a Keycloak
	// realm URL) or "generic" (any OpenID provider).
	Provider string `yaml:"provider" env:"SERVICE_OIDC_PROVIDER"`
	// RolesClaim is the dotted path of the claim that holds role names;
	// empty: Keycloak's realm_access and resource_access.<clientId>.
	RolesClaim string `yaml:"rolesClaim" env:"SERVICE_OIDC_ROLES_CLAIM"`
	// IntrospectionURL is the RFC 7662 endpoint used instead of the
	// discovery document's (Ory Hydra lists none: it is on its admin API).
	IntrospectionURL string `yaml:"introspectionUrl" env:"SERVICE_OIDC_INTROSPECTION_URL"`
	// SubjectClaim names the claim a user's subject is read from; empty:
	// sub (a UUID in Keycloak). preferred_username gives the names
	// project-member examples use.
	SubjectClaim string `yaml:"subjectClaim" env:"SERVICE_OIDC_SUBJECT_CLAIM"`
	ClientID     string `yaml:"clientId" env:"SERVICE_OIDC_CLIENT_ID"`
	// Audience is a further aud value marking Bearer access tokens meant
	// for this service (an API identifier), besides the client id.
	Audience string `yaml:"audience" env:"SERVICE_OIDC_AUDIENCE"`
	// ClientSecret comes from the environment (secret storage).
	ClientSecret string `yaml:"-" env:"SERVICE_OIDC_CLIENT_SECRET"`
	// FileClientSecret is auth.oidc.clientSecret of the config file, kept
	// apart so that validation knows where the secret came from: it is
	// refused unless AllowSecretInConfig is set.
	FileClientSecret string `yaml:"clientSecret"`
	ClientSecretFile string `yaml:"clientSecretFile" env:"SERVICE_OIDC_CLIENT_SECRET_FILE"`
	RedirectURI      string `yaml:"redirectUri" env:"SERVICE_OIDC_REDIRECT_URI"`
	// AllowSecretInConfig is the explicit opt-in for a plain-text
	// clientSecret in the config file (a lab set-up, never production).
	AllowSecretInConfig bool `yaml:"allowSecretInConfig" env:"SERVICE_OIDC_ALLOW_SECRET_IN_CONFIG"`
	// CAFile is a PEM bundle added to the system roots for every call to
	// the provider. NODE_EXTRA_CA_CERTS, the variable the specification
	// names, is honoured too (see CAFiles).
	CAFile           string `yaml:"caFile" env:"SERVICE_OIDC_CA_FILE"`
	NodeExtraCACerts string `yaml:"-" env:"NODE_EXTRA_CA_CERTS"`
	// RoleMap maps exact provider role names to the four roles, for realms
	// that use other names. Empty (the default) keeps the specification's
	// behaviour.
	RoleMap map[string]string `yaml:"roleMap" env:"SERVICE_OIDC_ROLE_MAP" envSeparator:"," envKeyValSeparator:":"`
	// Scopes are asked for in the code flow; empty: the provider's default
	// (openid profile email, plus offline_access for a generic provider
	// that lists it, so that sessions can be refreshed).
	Scopes []string `yaml:"scopes" env:"SERVICE_OIDC_SCOPES" envSeparator:","`
	// PasswordLogin switches POST /auth/login (ROPC) on or off.
	PasswordLogin *bool `yaml:"passwordLogin" env:"SERVICE_OIDC_PASSWORD_LOGIN"`
	// SessionIdle ends a login session unused for this long.
	SessionIdle time.Duration `yaml:"sessionIdle" env:"SERVICE_OIDC_SESSION_IDLE"`
	// SessionMax ends a login session this long after login, whatever
	// the refresh token allows.
	SessionMax time.Duration `yaml:"sessionMax" env:"SERVICE_OIDC_SESSION_MAX"`
	// RefreshBefore is how long before the access token expires a session
	// refreshes it.
	RefreshBefore time.Duration `yaml:"refreshBefore" env:"SERVICE_OIDC_REFRESH_BEFORE"`
	// LoginFailures failed password logins within LoginWindow, per username
	// and (times four) per client address, answer 429 until the window
	// slides past them.
	LoginFailures int           `yaml:"loginFailures" env:"SERVICE_OIDC_LOGIN_FAILURES"`
	LoginWindow   time.Duration `yaml:"loginWindow" env:"SERVICE_OIDC_LOGIN_WINDOW"`
	// JWKSRefetch is the least time between two JWKS fetches caused by a
	// token with an unknown key id (default 30s, at least 1s).
	JWKSRefetch time.Duration `yaml:"jwksRefetch" env:"SERVICE_OIDC_JWKS_REFETCH"`
	// ClockSkew is the clock difference tolerated on exp, nbf and iat
	// (default 30s, at most 5m; 0 tolerates none).
	ClockSkew time.Duration `yaml:"clockSkew" env:"SERVICE_OIDC_CLOCK_SKEW"`
	// HTTPTimeout bounds each call to the provider (discovery, keys,
	// token, logout, introspection).
	HTTPTimeout time.Duration `yaml:"httpTimeout" env:"SERVICE_OIDC_HTTP_TIMEOUT"`
	// TokenCacheSize bounds the verified Bearer access tokens kept, so a
	// token seen again is not verified again.
	TokenCacheSize int `yaml:"tokenCacheSize" env:"SERVICE_OIDC_TOKEN_CACHE_SIZE"`
}

// defaultOIDC is auth.oidc's part of Defaults; the session limits apply to
// every mode's login sessions.
func defaultOIDC() OIDC {
	return OIDC{SessionIdle: 8 * time.Hour, SessionMax: 24 * time.Hour, RefreshBefore: 60 * time.Second, LoginFailures: 5,
		LoginWindow: 15 * time.Minute, JWKSRefetch: 30 * time.Second, ClockSkew: 30 * time.Second, HTTPTimeout: 10 * time.Second,
		TokenCacheSize: 10_000}
}

// PasswordLoginEnabled reports whether POST /auth/login is on (default on,
// as the specification lists it).
func (o OIDC) PasswordLoginEnabled() bool { return o.PasswordLogin == nil || *o.PasswordLogin }

// CAFiles lists the PEM bundles to trust in addition to the system roots.
func (o OIDC) CAFiles() []string {
	var out []string
	for _, f := range []string{o.CAFile, o.NodeExtraCACerts} {
		if f != "" && !contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Secret returns the client secret: SERVICE_OIDC_CLIENT_SECRET, else the
// config file's (when allowed), else the content of the secret file.
func (o OIDC) Secret() (string, error) {
	if o.ClientSecret != "" {
		return o.ClientSecret, nil
	}
	if o.FileClientSecret != "" && o.AllowSecretInConfig {
		return o.FileClientSecret, nil
	}
	if o.ClientSecretFile == "" {
		return "", nil
	}
	s, err := readSecretFile(o.ClientSecretFile)
	if err != nil {
		return "", fmt.Errorf("auth.oidc.clientSecretFile / SERVICE_OIDC_CLIENT_SECRET_FILE: %w", err)
	}
	return s, nil
}

// Roles turns RoleMap into domain roles (upper-cased targets).
func (o OIDC) Roles() map[string]domain.Role {
	if len(o.RoleMap) == 0 {
		return nil
	}
	m := make(map[string]domain.Role, len(o.RoleMap))
	for k, v := range o.RoleMap {
		m[k] = domain.Role(strings.ToUpper(strings.TrimSpace(v)))
	}
	return m
}

// TrustedIssuer is one of auth.oidc.additionalIssuers.
type TrustedIssuer struct {
	Issuer string `yaml:"issuer"`
	// ClientID is the client id (azp) or audience (aud) its access tokens
	// must name.
	ClientID     string `yaml:"clientId"`
	DiscoveryURL string `yaml:"discoveryUrl"`
	// CAFile is a PEM bundle trusted for this issuer, with the system roots
	// and auth.oidc.caFile.
	CAFile string `yaml:"caFile"`
}

// validateOIDC checks auth.oidc.* when OIDC is on.
func (c Config) validateOIDC() []error {
	o := c.Auth.OIDC
	if !o.Enabled {
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	generic := o.Provider == ProviderGeneric
	switch o.Provider {
	case "", ProviderKeycloak, ProviderGeneric:
	default:
		bad("auth.oidc.provider / SERVICE_OIDC_PROVIDER: %q is not keycloak or generic", o.Provider)
	}
	checkIssuer := CheckIssuer
	if generic {
		checkIssuer = CheckGenericIssuer
	}
	if err := checkIssuer(o.Issuer); err != nil {
		bad("auth.oidc.issuer / SERVICE_OIDC_ISSUER: %v", err)
	}
	if o.SubjectClaim != "" && (strings.ContainsAny(o.SubjectClaim, ". ") || strings.TrimSpace(o.SubjectClaim) == "") {
		bad("auth.oidc.subjectClaim / SERVICE_OIDC_SUBJECT_CLAIM: %q: want a top-level claim name such as sub or preferred_username", o.SubjectClaim)
	}
	if o.IntrospectionURL != "" {
		if u, err := url.Parse(o.IntrospectionURL); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.Fragment != "" {
			bad("auth.oidc.introspectionUrl / SERVICE_OIDC_INTROSPECTION_URL: %q is not an http(s) URL", o.IntrospectionURL)
		}
	}
	if len(o.Scopes) > 0 && !contains(o.Scopes, "openid") {
		bad("auth.oidc.scopes / SERVICE_OIDC_SCOPES: %q: must include openid (an OpenID Connect login needs its id token)", strings.Join(o.Scopes, ","))
	}
	if o.RolesClaim != "" && (strings.HasPrefix(o.RolesClaim, ".") || strings.HasSuffix(o.RolesClaim, ".") || strings.Contains(o.RolesClaim, "..")) {
		bad("auth.oidc.rolesClaim / SERVICE_OIDC_ROLES_CLAIM: %q: want a dotted claim path such as groups or resource_access.agent-service.roles", o.RolesClaim)
	}
	if o.DiscoveryURL != "" {
		if err := CheckDiscoveryURL(o.DiscoveryURL, o.Issuer, generic); err != nil {
			bad("auth.oidc.discoveryUrl / SERVICE_OIDC_DISCOVERY_URL: %v", err)
		}
	}
	seen := map[string]bool{o.Issuer: true}
	for i, a := range o.AdditionalIssuers {
		name := fmt.Sprintf("auth.oidc.additionalIssuers[%d]", i)
		if err := checkIssuer(a.Issuer); err != nil {
			bad("%s.issuer: %v", name, err)
		} else if seen[a.Issuer] {
			bad("%s.issuer: %q is named twice (or is auth.oidc.issuer)", name, a.Issuer)
		}
		seen[a.Issuer] = true
		if a.ClientID == "" {
			bad("%s.clientId: must name the client id (azp) or audience (aud) this issuer's tokens carry", name)
		}
		if a.DiscoveryURL != "" {
			if err := CheckDiscoveryURL(a.DiscoveryURL, a.Issuer, generic); err != nil {
				bad("%s.discoveryUrl: %v", name, err)
			}
		}
		if a.CAFile != "" {
			if _, err := os.Stat(a.CAFile); err != nil {
				bad("%s.caFile: %v", name, err)
			}
		}
	}
	if o.ClientID == "" {
		bad("auth.oidc.clientId / SERVICE_OIDC_CLIENT_ID: must be set to the client id configured at the provider")
	}
	switch {
	case o.FileClientSecret != "" && !o.AllowSecretInConfig:
		bad("auth.oidc.clientSecret: a plain-text client secret in the config file is refused, because config files are copied, committed and shown in diffs; " +
			"supply it as SERVICE_OIDC_CLIENT_SECRET or SERVICE_OIDC_CLIENT_SECRET_FILE from secret storage, or set auth.oidc.allowSecretInConfig: true to accept the risk")
	case o.ClientSecret != "" && o.ClientSecretFile != "":
		bad("SERVICE_OIDC_CLIENT_SECRET and auth.oidc.clientSecretFile / SERVICE_OIDC_CLIENT_SECRET_FILE are both set; set one of them")
	case o.ClientSecret == "" && o.FileClientSecret == "" && o.ClientSecretFile == "":
		bad("SERVICE_OIDC_CLIENT_SECRET or SERVICE_OIDC_CLIENT_SECRET_FILE: the service is a confidential client and needs the client secret")
	case o.ClientSecret == "" && o.FileClientSecret == "":
		if _, err := o.Secret(); err != nil {
			bad("%v", err)
		}
	}
	if err := CheckRedirectURI(o.RedirectURI, c.Server.BasePath); err != nil {
		bad("auth.oidc.redirectUri / SERVICE_OIDC_REDIRECT_URI: %v", err)
	}
	for _, f := range o.CAFiles() {
		if _, err := os.Stat(f); err != nil {
			bad("SERVICE_OIDC_CA_FILE / NODE_EXTRA_CA_CERTS: %v", err)
		}
	}
	for k, r := range o.Roles() {
		if !r.IsBuiltin() {
			bad("auth.oidc.roleMap / SERVICE_OIDC_ROLE_MAP: %q maps to %q, not one of ADMIN, USER, LEAD, AUDITOR", k, string(r))
		}
	}
	if o.JWKSRefetch < time.Second {
		bad("auth.oidc.jwksRefetch / SERVICE_OIDC_JWKS_REFETCH: %s is below the 1s minimum", o.JWKSRefetch)
	}
	if o.ClockSkew < 0 || o.ClockSkew > 5*time.Minute {
		bad("auth.oidc.clockSkew / SERVICE_OIDC_CLOCK_SKEW: %s is outside 0-5m", o.ClockSkew)
	}
	if o.HTTPTimeout < time.Second || o.HTTPTimeout > 5*time.Minute {
		bad("auth.oidc.httpTimeout / SERVICE_OIDC_HTTP_TIMEOUT: %s is outside 1s-5m", o.HTTPTimeout)
	}
	if o.TokenCacheSize <= 0 {
		bad("auth.oidc.tokenCacheSize / SERVICE_OIDC_TOKEN_CACHE_SIZE: %d is not positive; use a number of tokens such as 10000 (the default)", o.TokenCacheSize)
	}
	return errs
}

// validateSessions checks the login session limits, which every mode's
// login sessions use (auth.oidc.* for historical reasons).
func (c Config) validateSessions() []error {
	o := c.Auth.OIDC
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.SessionIdle <= 0 || o.SessionMax <= 0 || o.RefreshBefore <= 0 || o.LoginWindow <= 0 {
		bad("auth.oidc.sessionIdle, sessionMax, refreshBefore, loginWindow (SERVICE_OIDC_SESSION_IDLE, …): must be positive durations such as 30m")
	}
	if o.SessionIdle > o.SessionMax {
		bad("auth.oidc.sessionIdle / SERVICE_OIDC_SESSION_IDLE (%s) must not exceed auth.oidc.sessionMax / SERVICE_OIDC_SESSION_MAX (%s)", o.SessionIdle, o.SessionMax)
	}
	if o.LoginFailures <= 0 {
		bad("auth.oidc.loginFailures / SERVICE_OIDC_LOGIN_FAILURES: must be a positive number")
	}
	return errs
}

// CheckIssuer accepts https://<host>/realms/<realm>; plain http only for a
// loopback host (tests and local Keycloak).
func CheckIssuer(issuer string) error {
	if issuer == "" {
		return fmt.Errorf("must be set, in the form https://<idp-host>/realms/<realm>")
	}
	u, err := url.Parse(issuer)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", issuer, err)
	}
	if err := checkScheme(u); err != nil {
		return fmt.Errorf("%q: %v", issuer, err)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q: no query, fragment or user info allowed", issuer)
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	n := len(parts)
	if n < 2 || parts[n-2] != "realms" || parts[n-1] == "" || strings.HasSuffix(u.Path, "/") {
		return fmt.Errorf("%q: want the form https://<idp-host>/realms/<realm> (no trailing slash)", issuer)
	}
	return nil
}

// Values of auth.oidc.provider.
const (
	ProviderKeycloak = "keycloak"
	ProviderGeneric  = "generic"
)

// CheckGenericIssuer accepts the issuer of any OpenID provider: an https
// URL (plain http only on a loopback host) without query, fragment or user
// info. A trailing slash is allowed: the issuer must be exactly what the
// provider's discovery document says (OpenID Discovery 4.3), and some
// providers' issuers end in one (Auth0).
func CheckGenericIssuer(issuer string) error {
	if issuer == "" {
		return fmt.Errorf("must be set to the provider's issuer URL")
	}
	u, err := url.Parse(issuer)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", issuer, err)
	}
	if err := checkScheme(u); err != nil {
		return fmt.Errorf("%q: %v", issuer, err)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q: no query, fragment or user info allowed", issuer)
	}
	return nil
}

// CheckDiscoveryURL accepts an http(s) URL other than issuer; for Keycloak
// (not generic) of the same realm (…/realms/<realm>). Plain http is allowed
// on any host: an internal URL inside a cluster network is the case it
// exists for.
func CheckDiscoveryURL(raw, issuer string, generic bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("%q is not an http(s) URL", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q: no query, fragment or user info allowed", raw)
	}
	if raw == issuer {
		return fmt.Errorf("%q is the issuer itself; leave it unset", raw)
	}
	realm := func(s string) string {
		if i := strings.LastIndex(s, "/realms/"); i >= 0 && !strings.HasSuffix(s, "/") {
			return s[i+len("/realms/"):]
		}
		return ""
	}
	if r := realm(raw); !generic && (r == "" || strings.Contains(r, "/") || r != realm(issuer)) {
		return fmt.Errorf("%q: want the same realm as the issuer at the internal host, http(s)://<internal-host>/realms/<realm>", raw)
	}
	return nil
}

// CheckRedirectURI accepts an absolute https URL whose path is
// basePath/auth/callback (http only on a loopback host).
func CheckRedirectURI(raw, basePath string) error {
	want := "https://<service-host>" + basePath + "/auth/callback"
	if raw == "" {
		return fmt.Errorf("must be set, in the form %s", want)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", raw, err)
	}
	if err := checkScheme(u); err != nil {
		return fmt.Errorf("%q: %v", raw, err)
	}
	if u.Path != basePath+"/auth/callback" || u.RawQuery != "" || u.Fragment != "" {
		if basePath != "" {
			return fmt.Errorf("%q: want the form %s (the callback is served under server.basePath)", raw, want)
		}
		return fmt.Errorf("%q: want the form %s", raw, want)
	}
	return nil
}

func checkScheme(u *url.URL) error {
	switch {
	case u.Host == "":
		return fmt.Errorf("no host")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && IsLoopback(u.Hostname()):
		return nil
	case u.Scheme == "http":
		return fmt.Errorf("plain http is allowed only for a loopback host (127.0.0.1, ::1, localhost); use https")
	}
	return fmt.Errorf("scheme %q: use https", u.Scheme)
}
