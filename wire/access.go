package wire

// The access model: projects, tool catalog, policies, agents, tool calls
// and the dashboard, served by every mode's edge (rest.Config.Access).

import (
	gwire "github.com/google/wire"

	"github.com/agentauth/agentauth/adapters/identity/apikey"
	"github.com/agentauth/agentauth/adapters/rest"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// accessSet provides the access-model use cases and rest.Access.
var accessSet = gwire.NewSet(
	sessionsUseCase,
	app.NewProjects, app.NewPolicyRules, app.NewCatalog, app.NewPolicies, app.NewAgents, app.NewToolCalls, app.NewDashboard,
	app.NewGateway, gatewayEdge,
	rest.AccessSet,
	roleKeys,
)

// sessionsUseCase is app.Sessions made project-aware, so a USER creates
// sessions only in its projects and a LEAD manages its projects' sessions.
func sessionsUseCase(store ports.SessionStore, settings ports.SettingsStore, authz *domain.Authorizer, clock ports.Clock,
	projects ports.ProjectStore, modes ports.SessionModeStore) *app.Sessions {
	return app.NewSessions(store, settings, authz, clock).WithTeams(projects, modes)
}

// roleKeys reads the keys of auth.keys for the API-key, local and debug
// rings.
func roleKeys(cfg config.Config) (apikey.RoleKeys, error) {
	keys, err := cfg.RoleKeys()
	if err != nil {
		return nil, err
	}
	out := make(apikey.RoleKeys, len(keys))
	for i, k := range keys {
		out[i] = apikey.Entry{Key: k.Key, Principal: k.Principal}
	}
	return out, nil
}
