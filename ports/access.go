package ports

import (
	"context"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// The store ports of the access model. Every store (SQLite and PostgreSQL)
// implements them with the same semantics: IDs and names are
// unique (a duplicate fails with domain.ErrConflict), a missing row fails
// with domain.ErrNotFound, lists come in a stable order.

// ProjectFilter narrows ListProjects. An empty Member lists every project;
// Page bounds the answer (keyed by creation time and ID).
type ProjectFilter struct {
	Member string // only projects this subject belongs to (leads included)
	Page
}

// EmbeddedMembers bounds the members a page of projects carries of each
// (see ProjectStore.ListProjects).
const EmbeddedMembers = 50

// ProjectStore keeps projects and their members.
type ProjectStore interface {
	CreateProject(ctx context.Context, p domain.Project) error
	GetProject(ctx context.Context, id string) (domain.Project, error)
	// ListProjects returns projects newest first (creation time, then ID).
	// A paged list (f.Limit > 0) carries at most EmbeddedMembers+1 members
	// of each project, the first by subject (byte-wise): one more than a
	// caller shows tells it there are others, which ListMembers pages. An
	// unpaged list, for the readers inside the process that need every
	// membership, and GetProject carry them all.
	ListProjects(ctx context.Context, f ProjectFilter) ([]domain.Project, error)
	// ListMembers returns a page of the project's members by subject
	// (ascending, byte-wise: members have no creation time); page.After.Key
	// is the last subject of the previous page, its time is not used. A
	// project with no members, or none at all, has an empty list: callers
	// check the project first.
	ListMembers(ctx context.Context, project string, page Page) ([]domain.Member, error)
	// SetMembers replaces the project's members.
	SetMembers(ctx context.Context, id string, members []domain.Member) error
}

// CatalogStore keeps the registered tool servers and their tools.
type CatalogStore interface {
	CreateServer(ctx context.Context, s domain.Server) error
	// ListServers returns a page of servers newest first (creation time,
	// then name).
	ListServers(ctx context.Context, page Page) ([]domain.Server, error)
	// GetServer fails with domain.ErrNotFound when name is not registered.
	GetServer(ctx context.Context, name string) (domain.Server, error)
	// CreateTool fails with domain.ErrNotFound when its server is not registered.
	CreateTool(ctx context.Context, t domain.Tool) error
	GetTool(ctx context.Context, name string) (domain.Tool, error)
	// ListTools returns a page of tools newest first (creation time, then
	// name).
	ListTools(ctx context.Context, page Page) ([]domain.Tool, error)

	// UpdateServer replaces what is registered of the server s.Name (all
	// but its name and creation time). DeleteServer removes it. Both fail
	// with domain.ErrNotFound when it is not registered, and with
	// domain.ErrConflict, changing nothing, while a call of one of its
	// tools waits for approval (it would run against another registration)
	// or, for DeleteServer, while tools are registered on it. The check
	// and the change are one atomic step.
	UpdateServer(ctx context.Context, s domain.Server) error
	DeleteServer(ctx context.Context, name string) error
	// UpdateTool replaces what is registered of the tool t.Name (all but
	// its name and creation time; every spelling of it stored before names
	// were canonical). DeleteTool removes it. Both fail with
	// domain.ErrNotFound when it is not registered (UpdateTool: or t.Server
	// is not), and with domain.ErrConflict, changing nothing, while a call
	// of it waits for approval; atomically.
	UpdateTool(ctx context.Context, t domain.Tool) error
	DeleteTool(ctx context.Context, name string) error

	// PinTool pins the definition (canonical JSON, and its digest) of the
	// tool name when none is pinned (domain.ErrNotFound otherwise, or when
	// it is not registered). A change of the tool's server drops its pin.
	PinTool(ctx context.Context, name string, def string, digest string) error
	// RecordToolDrift records that the tool's server declares def (of
	// digest) instead of the pinned definition; domain.ErrNotFound when
	// the tool is not pinned, is pinned with def, or def is recorded
	// already.
	RecordToolDrift(ctx context.Context, name string, def string, digest string, at time.Time) error
	// AcceptToolDefinition pins the changed definition recorded for name
	// when its digest is digest (domain.ErrNotFound otherwise).
	AcceptToolDefinition(ctx context.Context, name, digest string) error
}

// PolicyStore keeps the tool policy rules.
type PolicyStore interface {
	CreatePolicy(ctx context.Context, r domain.PolicyRule) error
	// ListPolicies returns a page of rules newest first (creation time,
	// then ID).
	ListPolicies(ctx context.Context, page Page) ([]domain.PolicyRule, error)
	DeletePolicy(ctx context.Context, id string) error
	// PolicyVersion is a number that changes, in the same transaction,
	// with every change to the rules (on every instance sharing the
	// store): one indexed read that tells a compiled copy of the rules
	// whether it is still current.
	PolicyVersion(ctx context.Context) (int64, error)
}

// AgentStore keeps the agents of sessions.
type AgentStore interface {
	CreateAgent(ctx context.Context, a domain.Agent) error
	GetAgent(ctx context.Context, id string) (domain.Agent, error)
	// ListAgents returns a page of the session's agents, newest first
	// (creation time, then ID).
	ListAgents(ctx context.Context, session string, page Page) ([]domain.Agent, error)
	// CountSubAgents returns how many of the session's agents have a
	// parent (the bound on an agent token's exchanges).
	CountSubAgents(ctx context.Context, session string) (int, error)
}

// ToolCallFilter narrows ListToolCalls. Zero fields do not filter; Page
// bounds the answer (keyed by creation time and ID).
type ToolCallFilter struct {
	Session string
	Status  domain.ToolCallStatus
	Page
}

// QuotaStore counts the calls that limits (domain.Limit) admit, once for
// every instance sharing the store.
type QuotaStore interface {
	// ChargeQuotas counts one call against each charge, all or none, each
	// in the window of its charge or, when the store already counts the
	// key in a later window (an instance whose clock is ahead), in that
	// one. When a count would pass its limit nothing is counted, and it
	// returns that charge's index and when the window it counts in ends;
	// else -1.
	ChargeQuotas(ctx context.Context, charges []domain.QuotaCharge) (int, time.Time, error)
	// QuotaUse lists up to limit counters whose window has not ended at
	// now, the fullest first.
	QuotaUse(ctx context.Context, now time.Time, limit int) ([]domain.QuotaUse, error)
}

// ToolCallStore keeps tool-call decisions and their approvals.
type ToolCallStore interface {
	CreateToolCall(ctx context.Context, c domain.ToolCall) error
	GetToolCall(ctx context.Context, id string) (domain.ToolCall, error)
	// ListToolCalls returns calls newest first (creation time, then ID).
	ListToolCalls(ctx context.Context, f ToolCallFilter) ([]domain.ToolCall, error)
	// ResolveToolCall moves a pending call to status (approved, rejected
	// or withdrawn) atomically and returns it; a call that is no longer
	// pending fails with domain.ErrConflict, so two approvers cannot both
	// win, nor an approver and the waiter giving up.
	ResolveToolCall(ctx context.Context, id string, status domain.ToolCallStatus, by string, at time.Time) (domain.ToolCall, error)
	// WithdrawWaiting withdraws, atomically, the pending call whose Waiter
	// is waiter and returns it; domain.ErrNotFound when none is pending.
	WithdrawWaiting(ctx context.Context, waiter, by string, at time.Time) (domain.ToolCall, error)
	// UseApproval marks an approved call used at at, atomically: a call
	// that is not approved or was used already fails with
	// domain.ErrConflict (domain.ErrNotFound when there is none), so an
	// approval releases one forwarded call.
	UseApproval(ctx context.Context, id string, at time.Time) error
}

// SessionModeStore changes the mode of a stored session.
type SessionModeStore interface {
	// SetSessionMode fails with domain.ErrNotFound when there is no such session.
	SetSessionMode(ctx context.Context, id string, mode domain.SessionMode) error
}

// ApprovalNotifier tells approvers, outside agentauth (a webhook), of each
// tool call that starts to wait for approval and of its outcome. Notify
// never blocks the decision it reports: it queues, and delivers (or gives
// up) on its own.
type ApprovalNotifier interface {
	Notify(ctx context.Context, a domain.Approval)
}
