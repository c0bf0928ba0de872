package app

import (
	"crypto/ed25519"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Application is every use case the edge serves, and the ports it records
// and decides with: the one value the REST adapter is built from.
// NewApplication builds it, for the service (wire) and for tests alike.
type Application struct {
	// Authenticator resolves a request's credential (cookie, Bearer key
	// or token) to a principal.
	Authenticator ports.Authenticator
	// Authorizer decides what a principal's roles allow.
	Authorizer *domain.Authorizer
	// AuditLog records every access decision.
	AuditLog ports.AuditLog

	Sessions    *Sessions
	Audit       *Audit
	Settings    *Settings
	Projects    *Projects
	Catalog     *Catalog
	Policies    *Policies
	Agents      *Agents
	ToolCalls   *ToolCalls
	Dashboard   *Dashboard
	AgentTokens *AgentTokens
	Gateway     *Gateway
	// Quotas count the calls limits admit.
	Quotas *Quotas
	// MCP is the MCP gateway's flow; nil when the gateway is off.
	MCP *MCPGateway
	// Registry is the settings, servers, tools and policy version every
	// use case reads and writes through (see Registry.KeepInMemory).
	Registry *Registry
	// Records are the agent sessions and agents every use case reads and
	// writes through (see SessionRecords.KeepInMemory).
	Records *SessionRecords
	// Keys are the managed API keys; nil in hybrid mode, where keys are
	// the centre's.
	Keys *APIKeys
	// Login keeps cookie sessions (OIDC logins, key sign-in); nil in
	// hybrid mode.
	Login *Login
	// Connections are people's own credentials upstream; nil without
	// their settings.
	Connections *Connections
	// Names are the labels of people and agents shown beside their ids.
	Names *Names
}

// Stores are the store ports the use cases are built on.
type Stores struct {
	Sessions     ports.SessionStore
	Audit        ports.AuditStore
	Checkpoints  ports.AuditCheckpointStore
	Settings     ports.SettingsStore
	Projects     ports.ProjectStore
	Catalog      ports.CatalogStore
	Policies     ports.PolicyStore
	Agents       ports.AgentStore
	ToolCalls    ports.ToolCallStore
	SessionModes ports.SessionModeStore
	// Quotas count the calls limits admit.
	Quotas ports.QuotaStore
	// Connections keeps people's connections.
	Connections ports.ConnectionStore
}

// Dependencies are what NewApplication builds the use cases from: the
// stores, and what each deployment mode provides itself.
type Dependencies struct {
	Stores        Stores
	Authenticator ports.Authenticator
	Authorizer    *domain.Authorizer
	AuditLog      ports.AuditLog
	Clock         ports.Clock
	// Signer signs agent tokens; AgentTokenLimits bound them.
	Signer           ports.AgentTokenSigner
	AgentTokenLimits AgentTokenLimits
	// AuditKey verifies the audit log's signed checkpoints.
	AuditKey ed25519.PublicKey
	// Keys and Login are built by the mode (either may be nil, see
	// Application).
	Keys  *APIKeys
	Login *Login
	// MCP configures the MCP gateway; nil leaves it off.
	MCP *MCPSettings
	// Approvals tells approvers outside agentauth of calls that wait for
	// them and of their outcomes (the approvals webhook); nil: nobody.
	Approvals ports.ApprovalNotifier
	// Connections configure people's own credentials upstream; nil
	// leaves them off.
	Connections *ConnectionsSettings
}

// ConnectionsSettings are what people's own credentials upstream are built
// from besides the stores.
type ConnectionsSettings struct {
	Config     ConnectionsConfig
	Authorizer ports.UpstreamAuthorizer
}

// NewApplication builds every use case from d.
func NewApplication(d Dependencies) Application {
	st := d.Stores
	reg := NewRegistry(st.Settings, st.Catalog, st.Policies)
	records := NewSessionRecords(st.Sessions, st.SessionModes, st.Agents)
	sessions := NewSessions(records, reg, st.Projects, records, d.Authorizer, d.Clock)
	sessions.owners = d.Keys
	rules := NewPolicyRules(reg)
	agents := NewAgents(records, sessions, d.Clock)
	quotas := NewQuotas(st.Quotas, d.Clock)
	calls := NewToolCalls(st.ToolCalls, records, reg, rules, reg, sessions, d.Authorizer, d.Clock).WithNotifier(d.Approvals).WithQuotas(quotas)
	calls.owners = d.Keys
	gateway := NewGateway(calls, reg, d.Clock)
	var mcp *MCPGateway
	var connections *Connections
	if d.MCP != nil {
		var err error
		if mcp, err = NewMCPGateway(gateway, d.AuditLog, *d.MCP); err != nil {
			panic("app: MCPSettings: " + err.Error()) // a bug of the wiring: it derives 32 bytes
		}
	}
	if c := d.Connections; c != nil && st.Connections != nil {
		var err error
		if connections, err = NewConnections(c.Config, st.Connections, reg, c.Authorizer, d.Authorizer, d.Clock); err != nil {
			panic("app: ConnectionsSettings: " + err.Error()) // a bug of the wiring: the keys are checked by the configuration
		}
		connections.WithPeople(d.Keys, d.Login)
		if mcp != nil {
			mcp.withConnections(connections)
		}
	}
	return Application{
		Authenticator: d.Authenticator,
		Authorizer:    d.Authorizer,
		AuditLog:      d.AuditLog,
		Sessions:      sessions,
		Audit:         NewAudit(st.Audit).WithCheckpoints(st.Checkpoints, d.AuditKey),
		Settings:      NewSettings(reg),
		Projects:      NewProjects(st.Projects, d.Authorizer, d.Clock),
		Catalog:       NewCatalog(reg, rules, st.Projects, d.Authorizer, d.Clock),
		Policies:      NewPolicies(reg, d.Clock).withRules(rules),
		Agents:        agents,
		ToolCalls:     calls,
		Dashboard:     NewDashboard(records, st.Projects, st.Audit, d.Authorizer),
		AgentTokens:   NewAgentTokens(sessions, records, agents, records, reg, rules, d.Authorizer, d.Signer, d.Clock, d.AgentTokenLimits).withOwners(d.Keys),
		Gateway:       gateway,
		Quotas:        quotas,
		MCP:           mcp,
		Registry:      reg,
		Records:       records,
		Keys:          d.Keys,
		Login:         d.Login,
		Connections:   connections,
		Names:         &Names{people: d.Keys, agents: records},
	}
}
