// Package debug provides the built-in test keys of debug mode
// (SERVICE_AUTH_DEBUG=true): debug-admin, debug-user, debug-lead and
// debug-auditor, each granting its role. It replaces real identity checking
// and exists for local development only; the service refuses to run it on a
// non-loopback address and marks every response with X-Auth-Debug: true.
package debug

import (
	"strings"

	"github.com/agentauth/agentauth/adapters/identity/apikey"
	"github.com/agentauth/agentauth/domain"
)

// Keys maps each built-in debug key to the role it grants.
func Keys() map[string]domain.Role {
	keys := map[string]domain.Role{}
	for _, r := range domain.BuiltinRoles() {
		keys["debug-"+strings.ToLower(string(r))] = r
	}
	return keys
}

// New returns the keyring of the four debug keys.
func New() *apikey.Keyring {
	var entries []apikey.Entry
	for key, role := range Keys() {
		entries = append(entries, apikey.Entry{Key: key, Principal: domain.Principal{
			Subject:    key,
			Roles:      []domain.Role{role},
			Method:     domain.MethodDebug,
			RoleSource: "debug key",
		}})
	}
	return apikey.NewKeyring(entries)
}
