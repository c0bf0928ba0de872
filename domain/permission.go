package domain

import (
	"fmt"
	"strings"
)

// Permission is a "resource:action" pair such as "sessions:write".
type Permission string

// The permissions the service knows. A role grants a subset of them; the
// endpoint a request targets names the one it needs.
const (
	PermMeRead Permission = "me:read"

	PermSessionsRead   Permission = "sessions:read"   // own sessions and those of one's projects
	PermSessionsWrite  Permission = "sessions:write"  // create and manage own sessions
	PermSessionsAudit  Permission = "sessions:audit"  // read every session, write none
	PermSessionsManage Permission = "sessions:manage" // manage every session
	PermSessionsTeam   Permission = "sessions:team"   // manage the sessions of projects one leads

	PermProjectsRead   Permission = "projects:read"
	PermProjectsCreate Permission = "projects:create"
	PermProjectsManage Permission = "projects:manage"

	PermToolsRead    Permission = "tools:read"
	PermServersRead  Permission = "servers:read"
	PermServersWrite Permission = "servers:write"

	PermPoliciesRead  Permission = "policies:read"
	PermPoliciesWrite Permission = "policies:write"

	PermSettingsRead  Permission = "settings:read"
	PermSettingsWrite Permission = "settings:write"

	PermDashboardRead Permission = "dashboard:read"

	PermAuditRead   Permission = "audit:read"
	PermAuditExport Permission = "audit:export"

	PermMetricsRead Permission = "metrics:read"
)

// AllPermissions lists every known permission in documentation order.
func AllPermissions() []Permission {
	return []Permission{
		PermMeRead,
		PermSessionsRead, PermSessionsWrite, PermSessionsAudit, PermSessionsManage, PermSessionsTeam,
		PermProjectsRead, PermProjectsCreate, PermProjectsManage,
		PermToolsRead, PermServersRead, PermServersWrite,
		PermPoliciesRead, PermPoliciesWrite,
		PermSettingsRead, PermSettingsWrite,
		PermDashboardRead,
		PermAuditRead, PermAuditExport,
		PermMetricsRead,
	}
}

// ParsePermission accepts a known "resource:action" name.
func ParsePermission(s string) (Permission, error) {
	p := Permission(strings.TrimSpace(s))
	for _, known := range AllPermissions() {
		if p == known {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown permission %q: %w", s, ErrInvalidInput)
}

// Resource is the part before the colon.
func (p Permission) Resource() string {
	resource, _, _ := strings.Cut(string(p), ":")
	return resource
}

// Action is the part after the colon.
func (p Permission) Action() string {
	_, action, _ := strings.Cut(string(p), ":")
	return action
}
