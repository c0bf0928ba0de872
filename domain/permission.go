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

	PermProjectsRead   Permission = "projects:read"   // projects one is a member of
	PermProjectsCreate Permission = "projects:create" // create projects (the creator leads them)
	PermProjectsWrite  Permission = "projects:write"  // manage members of projects one leads
	PermProjectsAudit  Permission = "projects:audit"  // read every project, write none
	PermProjectsManage Permission = "projects:manage" // manage every project

	PermToolsRead    Permission = "tools:read" // list the tools policy lets one use
	PermToolsWrite   Permission = "tools:write"
	PermServersRead  Permission = "servers:read"
	PermServersWrite Permission = "servers:write"

	PermAgentsWrite      Permission = "agents:write"      // create agents in sessions one manages
	PermAgentsToken      Permission = "agents:token"      // mint agent tokens in sessions one manages
	PermTokensIntrospect Permission = "tokens:introspect" // ask whether an agent token is active (tool servers)
	PermToolCallsWrite   Permission = "toolcalls:write"   // ask for tool-call decisions
	PermToolCallsApprove Permission = "toolcalls:approve" // approve or reject calls of sessions one manages

	PermPoliciesRead  Permission = "policies:read"
	PermPoliciesWrite Permission = "policies:write"

	PermSettingsRead  Permission = "settings:read"
	PermSettingsWrite Permission = "settings:write"

	PermDashboardRead Permission = "dashboard:read"

	PermAuditRead   Permission = "audit:read"
	PermAuditExport Permission = "audit:export"

	PermMetricsRead Permission = "metrics:read"

	PermKeysRead   Permission = "keys:read"   // list one's own managed API keys
	PermKeysWrite  Permission = "keys:write"  // make and revoke one's own managed API keys
	PermKeysTeam   Permission = "keys:team"   // list the keys of the projects one leads
	PermKeysAudit  Permission = "keys:audit"  // list every key, change none
	PermKeysManage Permission = "keys:manage" // service accounts and their keys; revoke any key

	PermConnectionsRead   Permission = "connections:read"   // list one's own connections to servers' upstreams
	PermConnectionsWrite  Permission = "connections:write"  // connect and disconnect one's own
	PermConnectionsAudit  Permission = "connections:audit"  // list everyone's connections, change none
	PermConnectionsManage Permission = "connections:manage" // remove anyone's connection
)

// AllPermissions lists every known permission in documentation order.
func AllPermissions() []Permission {
	return []Permission{
		PermMeRead,
		PermSessionsRead, PermSessionsWrite, PermSessionsAudit, PermSessionsManage, PermSessionsTeam,
		PermProjectsRead, PermProjectsCreate, PermProjectsWrite, PermProjectsAudit, PermProjectsManage,
		PermToolsRead, PermToolsWrite, PermServersRead, PermServersWrite,
		PermAgentsWrite, PermAgentsToken, PermTokensIntrospect, PermToolCallsWrite, PermToolCallsApprove,
		PermPoliciesRead, PermPoliciesWrite,
		PermSettingsRead, PermSettingsWrite,
		PermDashboardRead,
		PermAuditRead, PermAuditExport,
		PermKeysRead, PermKeysWrite, PermKeysTeam, PermKeysAudit, PermKeysManage,
		PermConnectionsRead, PermConnectionsWrite, PermConnectionsAudit, PermConnectionsManage,
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

// PermissionOf joins an action and a resource into "resource:action", as
// `agentauth policy can` and the console's simulator take them. An action
// holding a colon is the whole permission, as the README's table and the
// audit records write it; resource may then be left out. actionName and
// resourceName are what the caller's user calls the two inputs (flags,
// form fields), for the messages. The result is checked by
// ParsePermission, not here.
func PermissionOf(action, resource, actionName, resourceName string) (string, error) {
	action = strings.ToLower(strings.TrimSpace(action))
	resource = strings.ToLower(strings.TrimSpace(resource))
	if res, _, whole := strings.Cut(action, ":"); whole {
		if resource != "" && resource != res {
			return "", fmt.Errorf("%s %s names resource %s, %s says %s; give one of them: %w", actionName, action, res, resourceName, resource, ErrInvalidInput)
		}
		return action, nil
	}
	if resource == "" {
		return "", fmt.Errorf("%s is required unless %s is a permission such as settings:read: %w", resourceName, actionName, ErrInvalidInput)
	}
	return resource + ":" + action, nil
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

// Describe says in a few words what the permission allows, for the README
// table and `agentauth policy can`.
func (p Permission) Describe() string {
	return permissionText[p]
}

var permissionText = map[Permission]string{
	PermMeRead:            "read one's own identity, roles and permissions",
	PermSessionsRead:      "list and read one's own sessions (LEAD: and those of projects it leads)",
	PermSessionsWrite:     "create sessions in one's projects, manage one's own",
	PermSessionsAudit:     "read every session, write none",
	PermSessionsManage:    "read and manage every session",
	PermSessionsTeam:      "read and manage the sessions of projects one leads, loosen their mode",
	PermProjectsRead:      "read the projects one is a member of",
	PermProjectsCreate:    "create projects (the creator leads them)",
	PermProjectsWrite:     "manage the members of projects one leads",
	PermProjectsAudit:     "read every project, write none",
	PermProjectsManage:    "create, change and delete every project",
	PermToolsRead:         "list the tools policy lets one use",
	PermToolsWrite:        "register and remove tools",
	PermServersRead:       "list tool servers",
	PermServersWrite:      "register and remove tool servers",
	PermAgentsWrite:       "create agents and sub-agents in sessions one manages",
	PermAgentsToken:       "mint agent tokens for tool servers in sessions one manages",
	PermTokensIntrospect:  "introspect agent tokens (RFC 7662): give it to tool servers' credentials",
	PermToolCallsWrite:    "ask for tool-call decisions in sessions one manages",
	PermToolCallsApprove:  "approve or reject pending tool calls of sessions one manages",
	PermPoliciesRead:      "read tool policies",
	PermPoliciesWrite:     "write tool policies",
	PermSettingsRead:      "read service settings",
	PermSettingsWrite:     "change service settings and the security gateway",
	PermDashboardRead:     "read the dashboard (LEAD: its projects; ADMIN: all)",
	PermAuditRead:         "read and verify the audit log",
	PermAuditExport:       "export the audit log as NDJSON",
	PermMetricsRead:       "read service metrics",
	PermKeysRead:          "list one's own managed API keys (never their secrets)",
	PermKeysWrite:         "make and revoke one's own managed API keys, each within one's own permissions",
	PermKeysTeam:          "list the managed keys of the members of projects one leads, and keys limited to them",
	PermKeysAudit:         "list every managed API key, change none",
	PermConnectionsRead:   "list one's own connections to servers' upstreams (never their tokens)",
	PermConnectionsWrite:  "connect one's own account at a server's upstream, and disconnect it",
	PermConnectionsAudit:  "list everyone's connections, change none",
	PermConnectionsManage: "remove anyone's connection (revoked at the authorization server)",
	PermKeysManage:        "make service accounts and their keys; revoke any key",
}
