package domain

// Reason codes of resource-level refusals and tool-call decisions. They are
// stable, machine-readable values for clients and the audit log; the
// accompanying message is for people.
const (
	ReasonRoleLacksPermission = "role_lacks_permission"
	ReasonNotSessionOwner     = "not_session_owner"
	ReasonNotProjectMember    = "not_project_member"
	ReasonNotProjectLead      = "not_project_lead"
	ReasonModeLoosening       = "mode_loosening_needs_lead"
	// ReasonRequestRefused: refused for a reason no permission lifts, such
	// as a cross-site request.
	ReasonRequestRefused = "request_refused"
)

// Refusal is a resource-level denial: the role grants the route's
// permission, but not on this resource (another user's session, a project
// the caller does not lead). It matches ErrForbidden and names the reason
// code and the permission that would have allowed the action.
type Refusal struct {
	Code    string
	Missing Permission
	Message string
}

func (e *Refusal) Error() string { return e.Code + ": " + e.Message }

// Is makes errors.Is(err, ErrForbidden) hold.
func (e *Refusal) Is(target error) bool { return target == ErrForbidden }

func refuse(code string, missing Permission, msg string) *Refusal {
	return &Refusal{Code: code, Missing: missing, Message: msg}
}
