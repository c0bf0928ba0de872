package config

import (
	"fmt"
	"strings"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/secretfile"
)

// RoleKey is an API key granting one role, built-in or custom
// (auth.keys[]), for automation and people in API-key, local and debug
// modes. The key is read from KeyFile (readable by its owner only), never
// written in the config file.
type RoleKey struct {
	// Subject names the key's holder in audit records and ownership.
	Subject string `yaml:"subject"`
	Role    string `yaml:"role"`
	KeyFile string `yaml:"keyFile"`
}

// validateAccess checks auth.keys: every entry names a subject once, a
// known role and an owner-only key file of at least domain.MinAPIKeyLength
// characters.
func (c Config) validateAccess() []error {
	var errs []error
	if m := c.Mode(); len(c.Auth.Keys) > 0 && m != ModeAPIKey && m != ModeLocal && m != ModeDebug {
		// Roles there come from the identity provider or the central
		// instance; a local key granting one would bypass it.
		errs = append(errs, fmt.Errorf("auth.keys: works in API-key, local and debug modes only, not in %s mode", m))
	}
	authz, err := c.Authorizer()
	seen := map[string]bool{}
	for i, k := range c.Auth.Keys {
		at := fmt.Sprintf("auth.keys[%d]", i)
		switch {
		case strings.TrimSpace(k.Subject) == "":
			errs = append(errs, fmt.Errorf("%s.subject: must not be empty", at))
		case seen[k.Subject]:
			errs = append(errs, fmt.Errorf("%s.subject: %q is used twice", at, k.Subject))
		}
		seen[k.Subject] = true
		if err == nil && !authz.Knows(domain.Role(strings.ToUpper(k.Role))) {
			errs = append(errs, fmt.Errorf("%s.role: %q is neither a built-in role nor one of auth.roles", at, k.Role))
		}
		if _, kerr := readRoleKey(k.KeyFile); kerr != nil {
			errs = append(errs, fmt.Errorf("%s.keyFile: %v", at, kerr))
		}
	}
	return errs
}

func readRoleKey(path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("must name a file holding the key")
	}
	key, err := secretfile.Read(path)
	if err != nil {
		return "", err
	}
	if len(key) < domain.MinAPIKeyLength {
		return "", fmt.Errorf("%s holds fewer than %d characters", path, domain.MinAPIKeyLength)
	}
	if !domain.IsBearerToken(key) {
		return "", fmt.Errorf("%s: the key %s", path, errKeySyntax)
	}
	return key, nil
}

// LoadedRoleKey is a key of auth.keys, read from its file, and the
// principal it authenticates.
type LoadedRoleKey struct {
	Key       string
	Principal domain.Principal
}

// RoleKeys reads the keys of auth.keys. Each authenticates as
// "key:<subject>" with its role.
func (c Config) RoleKeys() ([]LoadedRoleKey, error) {
	out := make([]LoadedRoleKey, 0, len(c.Auth.Keys))
	for i, k := range c.Auth.Keys {
		key, err := readRoleKey(k.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("auth.keys[%d].keyFile: %w", i, err)
		}
		out = append(out, LoadedRoleKey{Key: key, Principal: k.principal()})
	}
	return out, nil
}

// RoleKeySubjects begins the subject of every auth.keys key: the
// configuration alone says who they are and which roles they hold.
const RoleKeySubjects = "key:"

// principal is who the key authenticates.
func (k RoleKey) principal() domain.Principal {
	return domain.Principal{Subject: RoleKeySubjects + k.Subject, Name: k.Subject, Roles: []domain.Role{domain.Role(strings.ToUpper(k.Role))},
		Method: domain.MethodAPIKey, RoleSource: "auth.keys"}
}

// RoleKeyRoles are the roles auth.keys gives each subject it names (as the
// keys authenticate them), without reading the keys.
func (c Config) RoleKeyRoles() map[string][]domain.Role {
	out := make(map[string][]domain.Role, len(c.Auth.Keys))
	for _, k := range c.Auth.Keys {
		p := k.principal()
		out[p.Subject] = p.Roles
	}
	return out
}
