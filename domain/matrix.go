package domain

//go:generate go run ../internal/docgen -root ..

// DefaultGrants is the built-in role → permission matrix. It is data so that
// the README table and the endpoint tests are generated from it and cannot
// drift from what the service enforces.
//
// ADMIN may do everything. LEAD extends USER with projects and the team
// dashboard. AUDITOR reads audit and working data but writes nothing.
func DefaultGrants() map[Role][]Permission {
	user := []Permission{
		PermMeRead,
		PermSessionsRead, PermSessionsWrite,
		PermProjectsRead,
		PermToolsRead,
		PermAgentsWrite, PermAgentsToken, PermToolCallsWrite, PermToolCallsApprove,
		PermKeysRead, PermKeysWrite,
		PermConnectionsRead, PermConnectionsWrite,
	}
	lead := append(append([]Permission(nil), user...),
		PermSessionsTeam,
		PermProjectsCreate, PermProjectsWrite,
		PermDashboardRead,
		PermKeysTeam,
	)
	auditor := []Permission{
		PermMeRead,
		PermSessionsRead, PermSessionsAudit,
		PermProjectsRead, PermProjectsAudit,
		PermToolsRead, PermServersRead,
		PermPoliciesRead,
		PermAuditRead, PermAuditExport,
		PermKeysRead, PermKeysAudit,
		PermConnectionsRead, PermConnectionsAudit,
	}
	return map[Role][]Permission{
		RoleAdmin:   AllPermissions(),
		RoleUser:    user,
		RoleLead:    lead,
		RoleAuditor: auditor,
	}
}
