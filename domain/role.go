package domain

import (
	"fmt"
	"slices"
	"strings"
)

// Role names a set of permissions. The four built-in roles are the only
// names recognised when roles are mapped from an identity provider; custom
// roles come from configuration.
type Role string

// The built-in roles.
const (
	RoleAdmin   Role = "ADMIN"
	RoleUser    Role = "USER"
	RoleLead    Role = "LEAD"
	RoleAuditor Role = "AUDITOR"
)

// BuiltinRoles lists the built-in roles in the order the documentation uses.
func BuiltinRoles() []Role { return []Role{RoleAdmin, RoleUser, RoleLead, RoleAuditor} }

// IsBuiltin reports whether r is one of the four built-in roles.
func (r Role) IsBuiltin() bool { return slices.Contains(BuiltinRoles(), r) }

// JoinRoles is the canonical text of a role list, the names separated by
// commas: what the audit hash covers and what stores keep.
func JoinRoles(roles []Role) string {
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	return strings.Join(names, ",")
}

// SplitRoles reads JoinRoles' text; the empty text is no role.
func SplitRoles(s string) []Role {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	roles := make([]Role, len(parts))
	for i, p := range parts {
		roles[i] = Role(p)
	}
	return roles
}

// validateRoleName accepts upper-case ASCII letters, digits, '_' and '-',
// starting with a letter: names that survive HTTP headers, logs and YAML
// without quoting.
func validateRoleName(name string) error {
	if name == "" {
		return fmt.Errorf("role name is empty: %w", ErrInvalidInput)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '_' || c == '-'):
		default:
			return fmt.Errorf("role name %q: use upper-case ASCII letters, digits, '_' or '-', starting with a letter: %w", name, ErrInvalidInput)
		}
	}
	return nil
}
