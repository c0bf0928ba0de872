package config

import (
	"errors"
	"fmt"
	"os"

	"github.com/agentauth/agentauth/internal/secretfile"
)

// readSecretFile reads a secret from path, the rules of every *_FILE
// setting (secretfile.Read). Errors name the file, not its content.
func readSecretFile(path string) (string, error) {
	s, err := secretfile.Read(path)
	var pe *os.PathError
	if errors.As(err, &pe) {
		return "", fmt.Errorf("cannot read %s: %w", path, pe.Err)
	}
	return s, err
}

// resolveSecretFiles fills the API key, the database URL and the audit
// signing key and the agent-token keys from their _FILE settings. Setting both a secret and its file is a conflict, not a
// silent choice.
func (c *Config) resolveSecretFiles() []error {
	var errs []error
	for _, p := range []struct {
		value      *string
		file       string
		valueNames string
		fileNames  string
	}{
		{&c.Auth.APIKey, c.Auth.APIKeyFile, "SERVICE_API_KEY / --api-key", "auth.apiKeyFile / SERVICE_API_KEY_FILE / --api-key-file"},
		{&c.Database.URL, c.Database.URLFile, "database.url / SERVICE_DATABASE_URL / --database-url", "database.urlFile / SERVICE_DATABASE_URL_FILE / --database-url-file"},
		{&c.Audit.SigningKey, c.Audit.SigningKeyFile, "SERVICE_AUDIT_SIGNING_KEY", "audit.signingKeyFile / SERVICE_AUDIT_SIGNING_KEY_FILE / --audit-signing-key-file"},
		{&c.Auth.AgentTokens.SigningKey, c.Auth.AgentTokens.SigningKeyFile, "SERVICE_AGENT_TOKENS_SIGNING_KEY", names("auth.agentTokens.signingKeyFile")},
		{&c.Auth.AgentTokens.PreviousKey, c.Auth.AgentTokens.PreviousKeyFile, "SERVICE_AGENT_TOKENS_PREVIOUS_KEY", names("auth.agentTokens.previousKeyFile")},
		{&c.Gateway.Connections.Key, c.Gateway.Connections.KeyFile, "SERVICE_GATEWAY_CONNECTIONS_KEY", names("gateway.connections.keyFile")},
		{&c.Gateway.Connections.PreviousKey, c.Gateway.Connections.PreviousKeyFile, "SERVICE_GATEWAY_CONNECTIONS_PREVIOUS_KEY", names("gateway.connections.previousKeyFile")},
		{&c.Approvals.WebhookSecret, c.Approvals.WebhookSecretFile, "SERVICE_APPROVALS_WEBHOOK_SECRET", names("approvals.webhookSecretFile")},
	} {
		if p.file == "" {
			continue
		}
		if *p.value != "" {
			errs = append(errs, fmt.Errorf("%s and %s are both set; set one of them", p.valueNames, p.fileNames))
			continue
		}
		s, err := readSecretFile(p.file)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.fileNames, err))
			continue
		}
		*p.value = s
	}
	return errs
}
