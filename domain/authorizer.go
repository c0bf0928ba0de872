package domain

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Authorizer decides whether a set of roles grants a permission. It is built
// once from the default matrix and the configured custom roles and is then
// read-only (but for a memo of permission lists), so one value serves all
// requests concurrently.
type Authorizer struct {
	grants map[Role]permBits
	roles  []Role
	// extends maps a custom role to the built-in role it extends.
	extends map[Role]Role
	// lists holds the permission list of each set of permissions asked
	// for (permBits → []Permission): a handful of role sets, each listed
	// once instead of on every GET /api/v2/me.
	lists sync.Map
}

// permBits is a set of permissions, one bit per entry of AllPermissions.
// TestPermissionsFitTheBitSet guards the 64-permission limit; past it a
// permission's bit would be zero and never granted (fail closed).
type permBits uint64

var permIndex = func() map[Permission]uint {
	all := AllPermissions()
	idx := make(map[Permission]uint, len(all))
	for i, p := range all {
		idx[p] = uint(i)
	}
	return idx
}()

func bitsOf(perms []Permission) permBits {
	var b permBits
	for _, p := range perms {
		if i, ok := permIndex[p]; ok {
			b |= 1 << i
		}
	}
	return b
}

// CustomRole is a role defined in configuration: its own permissions plus,
// optionally, everything a built-in role grants.
type CustomRole struct {
	Name        Role
	Extends     Role
	Permissions []Permission
}

// NewAuthorizer returns the default matrix extended with custom roles. A
// custom role may not redefine a built-in role, appear twice, extend an
// unknown role or name an unknown permission.
func NewAuthorizer(custom []CustomRole) (*Authorizer, error) {
	a := &Authorizer{grants: map[Role]permBits{}, extends: map[Role]Role{}}
	for _, r := range BuiltinRoles() {
		a.grants[r] = bitsOf(DefaultGrants()[r])
		a.roles = append(a.roles, r)
	}
	for _, c := range custom {
		if err := validateRoleName(string(c.Name)); err != nil {
			return nil, err
		}
		if _, dup := a.grants[c.Name]; dup {
			return nil, fmt.Errorf("role %s is defined twice or redefines a built-in role: %w", c.Name, ErrInvalidInput)
		}
		var b permBits
		if c.Extends != "" {
			if !c.Extends.IsBuiltin() {
				return nil, fmt.Errorf("role %s extends %q, which is not a built-in role: %w", c.Name, c.Extends, ErrInvalidInput)
			}
			b = a.grants[c.Extends]
			a.extends[c.Name] = c.Extends
		}
		for _, p := range c.Permissions {
			if _, err := ParsePermission(string(p)); err != nil {
				return nil, fmt.Errorf("role %s: %w", c.Name, err)
			}
		}
		a.grants[c.Name] = b | bitsOf(c.Permissions)
		a.roles = append(a.roles, c.Name)
	}
	return a, nil
}

// Roles lists the built-in roles followed by the custom ones.
func (a *Authorizer) Roles() []Role { return append([]Role(nil), a.roles...) }

// PolicyRoles is the roles that policy rules about roles apply to: the
// caller's roles plus the built-in role each custom one extends, so a role
// defined as "USER and more" cannot slip past a rule written for USER.
func (a *Authorizer) PolicyRoles(roles []Role) []Role {
	out := roles
	for _, r := range roles {
		if base, ok := a.extends[r]; ok && !slices.Contains(out, base) {
			if len(out) == len(roles) {
				out = slices.Clone(roles)
			}
			out = append(out, base)
		}
	}
	return out
}

// Knows reports whether r is a built-in or configured role.
func (a *Authorizer) Knows(r Role) bool {
	_, ok := a.grants[r]
	return ok
}

// Permissions lists what the roles grant together, in documentation order.
// The list is shared between callers: read it, never change it.
func (a *Authorizer) Permissions(roles []Role) []Permission { return a.listOf(a.union(roles)) }

// listOf lists b, memoized.
func (a *Authorizer) listOf(b permBits) []Permission {
	if l, ok := a.lists.Load(b); ok {
		return l.([]Permission)
	}
	l, _ := a.lists.LoadOrStore(b, permissionList(b))
	return l.([]Permission)
}

func permissionList(b permBits) []Permission {
	var out []Permission
	for _, p := range AllPermissions() {
		if b&(1<<permIndex[p]) != 0 {
			out = append(out, p)
		}
	}
	return out
}

func (a *Authorizer) union(roles []Role) permBits {
	var b permBits
	for _, r := range roles {
		b |= a.grants[r]
	}
	return b
}

// Decide allows the request when any of the roles grants need. An unknown
// permission or an empty role list is refused: the zero value grants nothing.
func (a *Authorizer) Decide(roles []Role, need Permission) Decision {
	i, known := permIndex[need]
	if known {
		for _, r := range roles {
			if a.grants[r]&(1<<i) != 0 {
				return Decision{Allowed: true, Permission: need, Role: r}
			}
		}
	}
	return Decision{Permission: need, Roles: roles}
}

// Allow decides for principal p: its roles must grant need and, when it
// presented a managed key, the key's scope must hold it too.
func (a *Authorizer) Allow(p Principal, need Permission) Decision {
	d := a.Decide(p.Roles, need)
	if p.Key != nil && d.Allowed {
		d.Key = p.Key.ID
		if !p.Key.Permissions.Has(need) {
			d.Allowed, d.Role, d.Roles = false, "", p.Roles
		}
	}
	return d
}

// PermissionsFor lists what p may do, in documentation order: what its
// roles grant, within its key's scope when it presented a managed key, and
// without keys:write for a built-in debug key, which makes no managed keys
// (they would outlive debug mode). The list is shared between callers, as
// Permissions' is.
func (a *Authorizer) PermissionsFor(p Principal) []Permission {
	switch {
	case p.Key != nil:
		return a.listOf(a.union(p.Roles) & p.Key.Permissions.bits)
	case p.Method == MethodDebug:
		return a.listOf(a.union(p.Roles) &^ bitsOf([]Permission{PermKeysWrite}))
	}
	return a.Permissions(p.Roles)
}

// Decision is the outcome of an access check, with what is needed to explain it.
type Decision struct {
	Allowed    bool
	Permission Permission
	// Role is the role that granted the permission, when allowed.
	Role Role
	// Roles are the roles that were held, when refused.
	Roles []Role
	// Key is the managed key the request presented: when allowed, the key
	// held the permission too; when refused with Key set, the key did not.
	Key string
}

// ReasonCode is the machine-readable form of a refusal's reason.
func (d Decision) ReasonCode() string {
	if d.Key != "" {
		return ReasonKeyLacksPermission
	}
	return ReasonRoleLacksPermission
}

// Reason explains the decision in one line, for error bodies and the audit log.
func (d Decision) Reason() string {
	switch {
	case d.Allowed && d.Key != "":
		return "role " + string(d.Role) + " grants " + string(d.Permission) + " and key " + d.Key + " holds it"
	case d.Allowed:
		return "role " + string(d.Role) + " grants " + string(d.Permission)
	case d.Key != "":
		return "key " + d.Key + " does not hold " + string(d.Permission) + " (its scopes, within its owner's roles now)"
	}
	switch len(d.Roles) {
	case 0:
		return "no role grants " + string(d.Permission)
	case 1:
		return "role " + string(d.Roles[0]) + " lacks " + string(d.Permission)
	}
	names := make([]string, len(d.Roles))
	for i, r := range d.Roles {
		names[i] = string(r)
	}
	return "roles " + strings.Join(names, ", ") + " lack " + string(d.Permission)
}
