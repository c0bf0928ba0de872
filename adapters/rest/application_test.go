package rest

import (
	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/app"
)

// StoresOf is every store port of the use cases served by one SQLite
// store, as the service's wiring hands them out: the tests of this package
// (and of rest_test) build their servers' use cases with
// app.NewApplication over it, the constructor wire uses.
func StoresOf(st *sqlite.Store) app.Stores {
	return app.Stores{Sessions: st, Audit: st, Checkpoints: st, Settings: st, Projects: st, Catalog: st, Policies: st,
		Agents: st, ToolCalls: st, SessionModes: st}
}
