package config

//go:generate go run ../internal/docgen -root ..

// Setting is one setting as an operator sees it: where it is set and what
// it takes. Settings is the one table that `agentauth --help`, `agentauth
// serve --help`, the serve flags, the configuration error messages and the
// README's settings table are made from; a test checks that it names every
// field of Config.
type Setting struct {
	// Key is the config-file key (server.port); empty when the setting is
	// never read from the file (secrets).
	Key string
	// Env is the environment variable; empty for file-only settings.
	Env string
	// Flag is the serve flag without dashes; empty when there is none.
	Flag string
	// Default is the value in force when nothing sets it, as shown to people.
	Default string
	// Accepts says in plain words which values are valid; error messages
	// quote it.
	Accepts string
	// Help says what the setting does.
	Help string
}

// Names is how messages name the setting: its key, variable and flag.
func (s Setting) Names() string {
	out := ""
	for _, n := range []string{s.Key, s.Env, flagName(s.Flag)} {
		if n == "" {
			continue
		}
		if out != "" {
			out += " / "
		}
		out += n
	}
	return out
}

func flagName(f string) string {
	if f == "" {
		return ""
	}
	return "--" + f
}

// Plain-words descriptions shared by several settings.
const (
	acceptsDuration = "a duration with a unit, such as 500ms, 30s, 5m or 1h"
	acceptsBool     = "true or false"
	acceptsPort     = "a port number from 1 to 65535, or 0"
	acceptsFile     = "the path of a file readable by its owner only (mode 0600 or 0400); a trailing newline is ignored"
)

// Settings lists every setting, in the order help and documentation show.
var Settings = []Setting{
	{Env: "SERVICE_CONFIG", Flag: "config", Default: "none", Accepts: "the path of a YAML file",
		Help: "The YAML config file."},
	{Key: "server.host", Env: "SERVICE_HOST", Flag: "host", Default: "127.0.0.1", Accepts: "an IP address or a host name of this machine",
		Help: "Listen address of the API."},
	{Key: "server.port", Env: "SERVICE_PORT", Flag: "port", Default: "8080", Accepts: acceptsPort + " for any free port",
		Help: "Listen port of the API; 0 picks a free one (the log says which)."},
	{Key: "server.shutdownTimeout", Env: "SERVICE_SHUTDOWN_TIMEOUT", Flag: "shutdown-timeout", Default: "30s", Accepts: acceptsDuration,
		Help: "How long SIGTERM waits for in-flight requests."},
	{Key: "server.basePath", Env: "SERVICE_BASE_PATH", Flag: "base-path", Default: "none (the root)", Accepts: "a path such as /agentauth",
		Help: "Serve every route, the login callback included, under this path prefix (behind a proxy that forwards /agentauth/... unchanged)."},
	{Key: "server.trustedProxies", Env: "SERVICE_TRUSTED_PROXIES", Flag: "trusted-proxies", Default: "none",
		Accepts: "CIDRs such as 10.0.0.0/8 or IP addresses, comma-separated in the variable and the flag, a list in the file",
		Help:    "Proxies whose X-Forwarded-For is believed for the client address (login limits, logs); none: the connection's address."},
	{Key: "server.managementPort", Env: "SERVICE_MANAGEMENT_PORT", Flag: "management-port", Default: "0 (off)", Accepts: acceptsPort + " to leave it off",
		Help: "The management listener: GET /health/live, /health/ready and /metrics without credentials and without audit records."},
	{Key: "server.managementHost", Env: "SERVICE_MANAGEMENT_HOST", Flag: "management-host", Default: "server.host", Accepts: "an IP address or a host name of this machine",
		Help: "Listen address of the management listener."},
	{Key: "server.publicPort", Env: "SERVICE_PUBLIC_PORT", Flag: "public-port", Default: "0 (off)", Accepts: acceptsPort + " to leave it off",
		Help: "The public listener of the agent-token issuer: its RFC 8414 metadata (at /.well-known/oauth-authorization-server<base path>) and key set without credentials, and POST /oauth2/token and /oauth2/introspect (audited); publish it to tool servers and MCP clients."},
	{Key: "server.publicHost", Env: "SERVICE_PUBLIC_HOST", Flag: "public-host", Default: "server.host", Accepts: "an IP address or a host name of this machine",
		Help: "Listen address of the public listener."},
	{Key: "dataDir", Env: "SERVICE_DATA_DIR", Flag: "data-dir", Default: "$XDG_DATA_HOME/agentauth, else ~/.local/share/agentauth", Accepts: "a folder path",
		Help: "SQLite database (agentauth.db) and secrets/api-key; created 0700, and an existing folder others may read is restricted to 0700 at start (a warning says so); one of another owner, such as a mounted volume, is left as it is with a warning."},
	{Key: "log.level", Env: "SERVICE_LOG_LEVEL", Flag: "log-level", Default: "info", Accepts: "debug, info, warn or error",
		Help: "Process log level; JSON lines on stderr, one per request."},
	{Env: "SERVICE_API_KEY", Flag: "api-key", Default: "none", Accepts: "at least 16 characters",
		Help: "API-key mode: the key granting ADMIN. Never in the file; prefer the variable (flags show in ps)."},
	{Key: "auth.apiKeyFile", Env: "SERVICE_API_KEY_FILE", Flag: "api-key-file", Default: "none", Accepts: acceptsFile,
		Help: "A file holding the API key, instead of SERVICE_API_KEY (setting both is an error)."},
	{Key: "auth.debug", Env: "SERVICE_AUTH_DEBUG", Flag: "auth-debug", Default: "false", Accepts: acceptsBool,
		Help: "Debug mode: four built-in keys, loopback only. Never in production."},
	{Key: "auth.roles", Default: "none", Accepts: "a list of {name, extends, permissions}",
		Help: "Custom roles (config file only)."},
	{Key: "auth.keys", Default: "none", Accepts: "a list of {subject, role, keyFile}",
		Help: "API keys granting one role each, read from owner-only files (config file only; API-key, local and debug modes)."},
	{Key: "database.url", Env: "SERVICE_DATABASE_URL", Flag: "database-url", Default: "empty: SQLite in the data folder",
		Accepts: "a PostgreSQL URL such as postgres://user@db:5432/agentauth",
		Help:    "PostgreSQL for several instances sharing one database."},
	{Key: "database.urlFile", Env: "SERVICE_DATABASE_URL_FILE", Flag: "database-url-file", Default: "none", Accepts: acceptsFile,
		Help: "A file holding the database URL (it carries the password), instead of database.url (setting both is an error)."},
	{Key: "audit.batchWait", Env: "SERVICE_AUDIT_BATCH_WAIT", Flag: "audit-batch-wait", Default: "500µs", Accepts: "a duration from 0 to 10ms, such as 500us",
		Help: "Under load, how long the audit writer waits to gather a bigger batch before one sync commits it."},
	{Key: "audit.signingKeyFile", Env: "SERVICE_AUDIT_SIGNING_KEY_FILE", Flag: "audit-signing-key-file", Default: "SQLite mode: {dataDir}/secrets/audit-signing.key, created on first start; PostgreSQL mode: none, required",
		Accepts: "an owner-only file holding a 32-byte Ed25519 seed in base64url (43 characters)",
		Help:    "The key audit checkpoints are signed with. Required with database.url (this or SERVICE_AUDIT_SIGNING_KEY): every instance on the database signs with it (a Secret). A key that did not sign the latest checkpoint stored stops start."},
	{Env: "SERVICE_AUDIT_SIGNING_KEY", Default: "none", Accepts: "a 32-byte Ed25519 seed in base64url (43 characters)",
		Help: "The audit signing key itself, for a Kubernetes secretKeyRef (environment only; instead of audit.signingKeyFile)."},
	{Key: "audit.checkpointEvery", Env: "SERVICE_AUDIT_CHECKPOINT_EVERY", Default: "10000", Accepts: "a whole number of at least 1",
		Help: "A signed audit checkpoint every that many records."},
	{Key: "audit.checkpointInterval", Env: "SERVICE_AUDIT_CHECKPOINT_INTERVAL", Default: "1m", Accepts: "a duration of at least 1s, such as 1m",
		Help: "A signed audit checkpoint after that long when records arrived (and one at shutdown)."},
	{Key: "audit.retention", Env: "SERVICE_AUDIT_RETENTION", Flag: "audit-retention", Default: "off", Accepts: "off, or whole days such as 90d, or a duration of at least 24h",
		Help: "Records older than this leave the audit log (hourly, cut at the newest signed checkpoint among them; on PostgreSQL one instance at a time); the kept chain verifies from that checkpoint."},
	{Key: "audit.archive", Env: "SERVICE_AUDIT_ARCHIVE", Flag: "audit-archive", Default: "true", Accepts: acceptsBool,
		Help: "With audit.retention: write the records removed to gzip NDJSON files in {dataDir}/audit/archive first (true), or drop them (false: export them beforehand)."},
	{Key: "audit.redactQueryParams", Env: "SERVICE_AUDIT_REDACT_QUERY_PARAMS", Flag: "audit-redact-query-params", Default: "none",
		Accepts: "query parameter names, comma-separated in the variable and the flag, a list in the file",
		Help:    "Query parameters whose values the audit log and the access log replace by [redacted:<keyed hash>], besides access_token, code, token, subject_token, actor_token, refresh_token, id_token_hint, client_secret, password and logout_token (the key is derived from the audit signing key, so instances agree)."},
	{Key: "audit.recoveryGrace", Env: "SERVICE_AUDIT_RECOVERY_GRACE", Flag: "audit-recovery-grace", Default: "5m", Accepts: "a positive duration such as 5m",
		Help: "How old a change committed without its audit record (crash, failed audit write) must be before recovery records it; longer than any request takes."},
	{Key: "auth.agentTokens.issuer", Env: "SERVICE_AGENT_TOKENS_ISSUER", Flag: "agent-tokens-issuer", Default: "http://{server.publicHost}:{server.publicPort}{server.basePath}, else http://{server.host}:{server.port}{server.basePath}",
		Accepts: "an http(s) URL without query or fragment whose path is server.basePath, such as https://agentauth.example.com",
		Help:    "The iss of agent tokens: the URL at which the public listener is reached (RFC 8414 clients fetch its metadata there and refuse one naming another issuer)."},
	{Key: "auth.agentTokens.signingKeyFile", Env: "SERVICE_AGENT_TOKENS_SIGNING_KEY_FILE", Flag: "agent-tokens-signing-key-file",
		Default: "SQLite mode: {dataDir}/secrets/agent-token-signing.key, created on first start; PostgreSQL mode: none, required",
		Accepts: "an owner-only file holding a 32-byte Ed25519 seed in base64url (43 characters)",
		Help:    "The key agent tokens are signed with (EdDSA). Required with database.url (this or SERVICE_AGENT_TOKENS_SIGNING_KEY): every instance on the database signs and verifies with it (a Secret), and derives from it the key that seals the MCP gateway's session ids."},
	{Env: "SERVICE_AGENT_TOKENS_SIGNING_KEY", Default: "none", Accepts: "a 32-byte Ed25519 seed in base64url (43 characters)",
		Help: "The agent-token signing key itself, instead of auth.agentTokens.signingKeyFile (environment only; a Secret)."},
	{Key: "auth.agentTokens.previousKeyFile", Env: "SERVICE_AGENT_TOKENS_PREVIOUS_KEY_FILE", Flag: "agent-tokens-previous-key-file", Default: "none",
		Accepts: "an owner-only file holding a 32-byte Ed25519 seed in base64url",
		Help:    "After a rotation: the key rotated out, published and verifying until auth.agentTokens.previousKeyUntil."},
	{Env: "SERVICE_AGENT_TOKENS_PREVIOUS_KEY", Default: "none", Accepts: "a 32-byte Ed25519 seed in base64url (43 characters)",
		Help: "The previous key itself, instead of auth.agentTokens.previousKeyFile (environment only)."},
	{Key: "auth.agentTokens.previousKeyUntil", Env: "SERVICE_AGENT_TOKENS_PREVIOUS_KEY_UNTIL", Flag: "agent-tokens-previous-key-until", Default: "none",
		Accepts: "an RFC 3339 time such as 2026-12-01T00:00:00Z",
		Help:    "When the previous key stops verifying (at least the old key's last token's expiry)."},
	{Key: "auth.agentTokens.maxTTL", Env: "SERVICE_AGENT_TOKENS_MAX_TTL", Flag: "agent-tokens-max-ttl", Default: "15m", Accepts: "a duration from 1s to 24h",
		Help: "The longest lifetime of an agent token, and the default."},
	{Key: "auth.agentTokens.rateLimit", Env: "SERVICE_AGENT_TOKENS_RATE_LIMIT", Flag: "agent-tokens-rate-limit", Default: "600", Accepts: "a whole number of at least 1",
		Help: "Requests per minute one caller may make to POST /oauth2/token (per client address; an IPv6 /64) and to POST /oauth2/introspect (per authenticated subject), on each instance; then 429."},
	{Key: "auth.agentTokens.maxSubAgents", Env: "SERVICE_AGENT_TOKENS_MAX_SUB_AGENTS", Flag: "agent-tokens-max-sub-agents", Default: "256", Accepts: "a whole number from 1 to 100000",
		Help: "The most sub-agents one session may hold: a token exchange past it is refused (invalid_grant, token_subagent_limit)."},
	{Key: "auth.apiKeys.maxTTL", Env: "SERVICE_API_KEYS_MAX_TTL", Flag: "api-keys-max-ttl", Default: "2160h (90 days)", Accepts: "a duration from 1h to 8784h (366 days)",
		Help: "The latest expiry a managed API key (POST /api/v2/keys) may be given; every key must have one."},
	{Key: "auth.apiKeys.maxPerOwner", Env: "SERVICE_API_KEYS_MAX_PER_OWNER", Flag: "api-keys-max-per-owner", Default: "20", Accepts: "a number from 1 to 1000",
		Help: "How many managed keys, neither revoked nor expired, one person or service account may hold; one more is answered 409."},
	{Key: "gateway.credentialsDir", Env: "SERVICE_GATEWAY_CREDENTIALS_DIR", Default: "none (servers get no credential)", Accepts: "a folder path (a mounted Secret)",
		Help: "Where the MCP gateway reads each registered server's upstream credential: the file named by the server's credential, read again at most every 10 s (a rotated Secret is picked up)."},
	{Key: "gateway.resourceURL", Env: "SERVICE_GATEWAY_RESOURCE_URL", Default: "http://{server.host}:{server.port}{server.basePath}", Accepts: "an http(s) URL without query or fragment",
		Help: "The API's public URL: the gateway's resources are {this}/mcp/{server}, as MCP clients reach them and as the protected-resource metadata names them."},
	{Key: "gateway.metadataURL", Env: "SERVICE_GATEWAY_METADATA_URL", Default: "http://{public listener}, else http://{management listener}", Accepts: "an http(s) URL without query or fragment",
		Help: "Public URL of the listener serving RFC 9728 protected-resource metadata without credentials (the public listener, else the management listener); named in the gateway's 401 WWW-Authenticate."},
	{Key: "gateway.authorizationServers", Env: "SERVICE_GATEWAY_AUTHORIZATION_SERVERS", Default: "the OIDC issuer and the agent-token issuer", Accepts: "http(s) URLs, comma-separated in the variable",
		Help: "The authorization_servers of the gateway's protected-resource metadata."},
	{Key: "gateway.callTimeout", Env: "SERVICE_GATEWAY_CALL_TIMEOUT", Default: "60s", Accepts: "a duration from 1s to 10m, such as 30s",
		Help: "How long the gateway waits for an upstream answer to one message."},
	{Key: "gateway.askTimeout", Env: "SERVICE_GATEWAY_ASK_TIMEOUT", Default: "5m", Accepts: "a duration from 1s to 1h, such as 5m",
		Help: "How long a tools/call that needs approval is held (with SSE keep-alives) before it fails as not approved."},
	{Key: "gateway.streamTimeout", Env: "SERVICE_GATEWAY_STREAM_TIMEOUT", Default: "30m", Accepts: "a duration from 1s to 24h, such as 30m",
		Help: "How long a GET event stream relayed from a server stays open; the client then reconnects."},
	{Key: "gateway.auditArguments", Env: "SERVICE_GATEWAY_AUDIT_ARGUMENTS", Default: "0 (the arguments' SHA-256 only)", Accepts: "a number of bytes from 0 to 4096",
		Help: "Record each tool call's arguments (RFC 8785 canonical JSON; a tools/call, POST …/tool-calls, an approval) in its audit record, cut to this many bytes; 0 records only their hash. The whole arguments stay with the stored call, for its approver."},
	{Key: "gateway.maxMessageBytes", Env: "SERVICE_GATEWAY_MAX_MESSAGE_BYTES", Default: "1048576", Accepts: "a number of bytes from 1024 to 1048576",
		Help: "The largest message a client may send and a server may answer through the gateway (an SSE answer counts whole)."},
	{Key: "gateway.connections.keyFile", Env: "SERVICE_GATEWAY_CONNECTIONS_KEY_FILE",
		Default: "SQLite mode: {dataDir}/secrets/connections.key, created on first start; PostgreSQL mode: none (people's connections off)",
		Accepts: "an owner-only file holding a 32-byte key in base64url (43 characters)",
		Help:    "The key (AES-256-GCM) that seals each person's upstream tokens (upstream_auth type oauth2) in the database. Every instance on one database needs the same (a Secret); without it, connecting answers 503 naming this setting."},
	{Env: "SERVICE_GATEWAY_CONNECTIONS_KEY", Default: "none", Accepts: "a 32-byte key in base64url (43 characters)",
		Help: "The connections' key itself, instead of gateway.connections.keyFile (environment only; a Secret)."},
	{Key: "gateway.connections.previousKeyFile", Env: "SERVICE_GATEWAY_CONNECTIONS_PREVIOUS_KEY_FILE", Default: "none",
		Accepts: "an owner-only file holding a 32-byte key in base64url",
		Help:    "After a rotation: the key rotated out. It still opens the tokens it sealed, which are sealed again under gateway.connections.keyFile at their next use; drop it once every connection was used or refreshed."},
	{Env: "SERVICE_GATEWAY_CONNECTIONS_PREVIOUS_KEY", Default: "none", Accepts: "a 32-byte key in base64url (43 characters)",
		Help: "The previous key itself, instead of gateway.connections.previousKeyFile (environment only)."},
	{Key: "gateway.connections.refreshBefore", Env: "SERVICE_GATEWAY_CONNECTIONS_REFRESH_BEFORE", Default: "1m", Accepts: "a duration from 1s to 1h",
		Help: "A person's upstream access token that expires within this is refreshed before it is sent (one request of one instance at a time refreshes; the others wait for it)."},
	{Key: "approvals.webhookURL", Env: "SERVICE_APPROVALS_WEBHOOK_URL", Default: "none", Accepts: "an http(s) URL",
		Help: "Where each tool call that starts to wait for approval, and its outcome, is POSTed as JSON signed as Standard Webhooks defines (a chat tool's incoming webhook takes it as it is); retried with backoff, never holding a decision."},
	{Key: "approvals.webhookSecretFile", Env: "SERVICE_APPROVALS_WEBHOOK_SECRET_FILE", Default: "none (required with approvals.webhookURL)", Accepts: "a file readable by its owner only, holding whsec_ and 24 to 64 random bytes in base64",
		Help: "The secret the approvals webhook's notices are signed with (webhook-signature: v1,<base64 HMAC-SHA256>); the receiver verifies with the same."},
	{Env: "SERVICE_APPROVALS_WEBHOOK_SECRET", Default: "none", Accepts: "whsec_ and 24 to 64 random bytes in base64",
		Help: "The approvals webhook's secret itself, instead of approvals.webhookSecretFile (environment only; a Secret)."},
	{Key: "auth.oidc.enabled", Env: "SERVICE_OIDC_ENABLED", Flag: "oidc-enabled", Default: "false", Accepts: acceptsBool,
		Help: "OIDC mode: users sign in at the identity provider (Keycloak)."},
	{Key: "auth.oidc.issuer", Env: "SERVICE_OIDC_ISSUER", Flag: "oidc-issuer", Default: "none", Accepts: "Keycloak: https://<idp-host>/realms/<realm>; generic: exactly the issuer of the provider's discovery document, a trailing / included (http only on loopback)",
		Help: "The provider's issuer URL: what tokens carry and where browsers are sent."},
	{Key: "auth.oidc.discoveryUrl", Env: "SERVICE_OIDC_DISCOVERY_URL", Flag: "oidc-discovery-url", Default: "the issuer", Accepts: "http(s)://<internal-host>/realms/<realm> (same realm)",
		Help: "Where the service itself reaches the provider (discovery, keys, token, logout, introspection) when not at the issuer, e.g. an internal cluster URL; browsers still go to the issuer's URLs."},
	{Key: "auth.oidc.provider", Env: "SERVICE_OIDC_PROVIDER", Flag: "oidc-provider", Default: "keycloak", Accepts: "keycloak or generic",
		Help: "generic: any OpenID provider (an issuer of any form; grants, revocation and introspection at the discovery document's endpoints)."},
	{Key: "auth.oidc.rolesClaim", Env: "SERVICE_OIDC_ROLES_CLAIM", Flag: "oidc-roles-claim", Default: "Keycloak's realm_access and resource_access.<clientId>", Accepts: "a dotted claim path such as groups or resource_access.agent-service.roles",
		Help: "The claim holding role names (an array of strings or one string), read in the id token, else the access token."},
	{Key: "auth.oidc.introspectionUrl", Env: "SERVICE_OIDC_INTROSPECTION_URL", Flag: "oidc-introspection-url", Default: "the discovery document's introspection_endpoint",
		Accepts: "an http(s) URL such as http://hydra-admin:4445/admin/oauth2/introspect",
		Help:    "The RFC 7662 endpoint opaque Bearer tokens are asked about, for a provider whose discovery document lists none (Ory Hydra: its admin API). Called with the client's credentials (HTTP Basic): keep plain http on a private network."},
	{Key: "auth.oidc.subjectClaim", Env: "SERVICE_OIDC_SUBJECT_CLAIM", Flag: "oidc-subject-claim", Default: "sub", Accepts: "a top-level claim name such as preferred_username or email",
		Help: "The claim a user's subject (audit records, project members, sessions) is read from: from the id token, else userinfo, else the access token at login; from the token for Bearer requests. sub is stable; a name the provider lets users change can later name someone else. With another claim than sub, back-channel logout ends sessions by sid only."},
	{Key: "auth.oidc.audience", Env: "SERVICE_OIDC_AUDIENCE", Flag: "oidc-audience", Default: "none (the client id only)", Accepts: "an aud value such as https://agents.example.com/api",
		Help: "Bearer access tokens whose aud holds this value are meant for the service too, besides those naming the client id in aud, azp or client_id."},
	{Key: "auth.oidc.additionalIssuers", Default: "none", Accepts: "a list of {issuer, clientId, discoveryUrl, caFile} (config file only)",
		Help: "Further issuers (another realm, e.g. for machine clients) whose access tokens are accepted as Bearer tokens, roles taken the same way; logins stay on auth.oidc.issuer."},
	{Key: "auth.oidc.clientId", Env: "SERVICE_OIDC_CLIENT_ID", Flag: "oidc-client-id", Default: "none", Accepts: "the client id at the provider",
		Help: "The service's client at the provider."},
	{Env: "SERVICE_OIDC_CLIENT_SECRET", Default: "none", Accepts: "the client secret",
		Help: "The client secret (environment only; or the _FILE variant)."},
	{Key: "auth.oidc.clientSecretFile", Env: "SERVICE_OIDC_CLIENT_SECRET_FILE", Flag: "oidc-client-secret-file", Default: "none", Accepts: acceptsFile,
		Help: "A file holding the client secret, instead of SERVICE_OIDC_CLIENT_SECRET (setting both is an error)."},
	{Key: "auth.oidc.clientSecret", Default: "none", Accepts: "the client secret; refused unless auth.oidc.allowSecretInConfig is true",
		Help: "The client secret in the config file (lab set-ups only)."},
	{Key: "auth.oidc.allowSecretInConfig", Env: "SERVICE_OIDC_ALLOW_SECRET_IN_CONFIG", Flag: "oidc-allow-secret-in-config", Default: "false", Accepts: acceptsBool,
		Help: "Accept auth.oidc.clientSecret in the config file."},
	{Key: "auth.oidc.redirectUri", Env: "SERVICE_OIDC_REDIRECT_URI", Flag: "oidc-redirect-uri", Default: "none", Accepts: "https://<service-host>/auth/callback (http only on loopback)",
		Help: "The callback URL registered at the provider; its origin is the service's public origin."},
	{Key: "auth.oidc.caFile", Env: "SERVICE_OIDC_CA_FILE", Flag: "oidc-ca-file", Default: "none (system roots)", Accepts: "the path of a PEM file",
		Help: "CA certificates to trust for the provider, besides the system roots."},
	{Env: "NODE_EXTRA_CA_CERTS", Default: "none", Accepts: "the path of a PEM file",
		Help: "Honoured like SERVICE_OIDC_CA_FILE (the variable the specification names)."},
	{Key: "auth.oidc.roleMap", Env: "SERVICE_OIDC_ROLE_MAP", Flag: "oidc-role-map", Default: "none",
		Accepts: "provider-role:ROLE pairs, comma-separated in the variable and the flag, a mapping in the file; ROLE is ADMIN, USER, LEAD or AUDITOR",
		Help:    "Provider role names that mean one of the four roles."},
	{Key: "auth.oidc.scopes", Env: "SERVICE_OIDC_SCOPES", Flag: "oidc-scopes", Default: "openid, profile, email; generic: plus offline_access when the provider lists it in scopes_supported",
		Accepts: "scope names, comma-separated in the variable and the flag, a list in the file; openid required",
		Help:    "Scopes the browser login asks for. Without a refresh token (most providers give one only for offline_access) a session ends when its access token expires: the API answers 401 and a browser signs in again."},
	{Key: "auth.oidc.passwordLogin", Env: "SERVICE_OIDC_PASSWORD_LOGIN", Flag: "oidc-password-login", Default: "true", Accepts: acceptsBool,
		Help: "Serve POST /auth/login (username and password, forwarded to the provider). Only a provider whose discovery document lists the password grant is asked; elsewhere the endpoint answers 404 naming this setting (set it to false there)."},
	{Key: "auth.oidc.sessionIdle", Env: "SERVICE_OIDC_SESSION_IDLE", Flag: "oidc-session-idle", Default: "8h", Accepts: acceptsDuration,
		Help: "A login session unused this long ends."},
	{Key: "auth.oidc.sessionMax", Env: "SERVICE_OIDC_SESSION_MAX", Flag: "oidc-session-max", Default: "24h", Accepts: acceptsDuration,
		Help: "A login session ends this long after login."},
	{Key: "auth.oidc.refreshBefore", Env: "SERVICE_OIDC_REFRESH_BEFORE", Flag: "oidc-refresh-before", Default: "60s", Accepts: acceptsDuration,
		Help: "How long before the access token expires a session refreshes it."},
	{Key: "auth.oidc.loginFailures", Env: "SERVICE_OIDC_LOGIN_FAILURES", Flag: "oidc-login-failures", Default: "5", Accepts: "a whole number, 1 or more",
		Help: "Failed password logins per user (four times as many per address) within the window before 429."},
	{Key: "auth.oidc.loginWindow", Env: "SERVICE_OIDC_LOGIN_WINDOW", Flag: "oidc-login-window", Default: "15m", Accepts: acceptsDuration,
		Help: "The window of auth.oidc.loginFailures."},
	{Key: "auth.oidc.jwksRefetch", Env: "SERVICE_OIDC_JWKS_REFETCH", Flag: "oidc-jwks-refetch", Default: "30s", Accepts: "a duration of 1s or more",
		Help: "Least time between two key fetches caused by an unknown key id."},
	{Key: "auth.oidc.clockSkew", Env: "SERVICE_OIDC_CLOCK_SKEW", Flag: "oidc-clock-skew", Default: "30s", Accepts: "a duration from 0 to 5m",
		Help: "Clock difference tolerated on exp, nbf and iat."},
	{Key: "auth.oidc.httpTimeout", Env: "SERVICE_OIDC_HTTP_TIMEOUT", Flag: "oidc-http-timeout", Default: "10s", Accepts: "a duration from 1s to 5m",
		Help: "Bound of one call to the identity provider (discovery, keys, token, logout, introspection)."},
	{Key: "auth.oidc.tokenCacheSize", Env: "SERVICE_OIDC_TOKEN_CACHE_SIZE", Flag: "oidc-token-cache-size", Default: "10000", Accepts: "a whole number, 1 or more",
		Help: "Verified Bearer access tokens kept, so that a token seen again is not verified again."},
	{Key: "auth.hybrid.remoteUrl", Env: "SERVICE_HYBRID_REMOTE_URL", Flag: "hybrid-remote-url", Default: "none (off)", Accepts: "https://<central-host> (http only on loopback)",
		Help: "Hybrid mode: the central instance every caller's roles come from."},
	{Key: "auth.hybrid.caFile", Env: "SERVICE_HYBRID_CA_FILE", Flag: "hybrid-ca-file", Default: "none (system roots)", Accepts: "the path of a PEM file",
		Help: "CA certificates to trust for the central instance."},
	{Key: "auth.hybrid.cacheTTL", Env: "SERVICE_HYBRID_CACHE_TTL", Flag: "hybrid-cache-ttl", Default: "30s", Accepts: acceptsDuration,
		Help: "How long an answer of the centre is reused."},
	{Key: "auth.hybrid.cacheSize", Env: "SERVICE_HYBRID_CACHE_SIZE", Flag: "hybrid-cache-size", Default: "10000", Accepts: "a whole number, 1 or more",
		Help: "Credentials kept in the cache at most."},
	{Key: "auth.hybrid.timeout", Env: "SERVICE_HYBRID_TIMEOUT", Flag: "hybrid-timeout", Default: "5s", Accepts: acceptsDuration,
		Help: "Bound of one call to the centre."},
}

// names is how messages name the setting with config key key: its key,
// variable and flag (see Setting.Names).
func names(key string) string {
	if s, ok := settingByKey(key); ok {
		return s.Names()
	}
	return key
}

// settingByEnv and settingByKey find a setting; ok is false when none has
// that name.
func settingByEnv(env string) (Setting, bool) {
	for _, s := range Settings {
		if s.Env != "" && s.Env == env {
			return s, true
		}
	}
	return Setting{}, false
}

func settingByKey(key string) (Setting, bool) {
	for _, s := range Settings {
		if s.Key != "" && s.Key == key {
			return s, true
		}
	}
	return Setting{}, false
}
