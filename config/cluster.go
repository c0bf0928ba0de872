package config

import (
	"fmt"

	"github.com/agentauth/agentauth/internal/pgurl"
)

// validateDatabase checks database.url / SERVICE_DATABASE_URL when it is
// set (empty selects the embedded SQLite file). Messages never repeat the
// URL: it may carry a password.
//
// PostgreSQL mode needs the audit signing key configured: the instances
// on the database extend one checkpoint chain, which verifies under one
// public key, and a key each instance created in its own data folder
// would differ from the others' (and be lost with an ephemeral folder).
// So does the agent-token signing key: a token one instance minted is
// verified by whichever instance a tool server asks, under its key.
func (c Config) validateDatabase() []error {
	if c.Database.URL == "" {
		return nil
	}
	var errs []error
	if _, err := pgurl.Parse(c.Database.URL); err != nil {
		errs = append(errs, fmt.Errorf("database.url / SERVICE_DATABASE_URL: %v", err))
	}
	if c.Audit.SigningKey == "" && c.Audit.SigningKeyFile == "" {
		errs = append(errs, fmt.Errorf("%s (or SERVICE_AUDIT_SIGNING_KEY): required with database.url: every instance on the database signs "+
			"audit checkpoints with the same key (one Secret), so none may create its own; create one with "+
			"`head -c 32 /dev/urandom | basenc --base64url`, or give the key an instance created (its {dataDir}/secrets/audit-signing.key)",
			names("audit.signingKeyFile")))
	}
	if c.Auth.AgentTokens.SigningKey == "" && c.Auth.AgentTokens.SigningKeyFile == "" {
		errs = append(errs, fmt.Errorf("%s (or SERVICE_AGENT_TOKENS_SIGNING_KEY): required with database.url: every instance on the database "+
			"signs and verifies agent tokens with the same key (one Secret), so none may create its own (the others would refuse its tokens); "+
			"create one with `head -c 32 /dev/urandom | basenc --base64url`, or give the key an instance created (its {dataDir}/secrets/agent-token-signing.key)",
			names("auth.agentTokens.signingKeyFile")))
	}
	return errs
}
