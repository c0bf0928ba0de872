package wire

// Store selection. Every deployment mode can run on either store: the
// embedded SQLite file (the default) or a shared PostgreSQL database
// (database.url / SERVICE_DATABASE_URL, for several instances behind a load
// balancer). Rather than doubling every injector (LocalSQLite,
// LocalPostgres, …), coreSet contains storeSet, whose one provider opens the
// store the configuration names and hands out its ports as the fields of
// Stores. The choice is made at run time from configuration, like the mode
// itself; a new store port is one more field here, and both stores must
// implement it for storesOf to compile.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	gwire "github.com/google/wire"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/adapters/auditlog/wal"
	"github.com/agentauth/agentauth/adapters/store/postgres"
	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/ports"
)

// Stores is every store port, all served by the one store the
// configuration selects.
type Stores struct {
	Sessions    ports.SessionStore
	Audit       ports.AuditStore
	Checkpoints ports.AuditCheckpointStore
	Settings    ports.SettingsStore
	// The access model.
	Projects     ports.ProjectStore
	Catalog      ports.CatalogStore
	Policies     ports.PolicyStore
	Agents       ports.AgentStore
	ToolCalls    ports.ToolCallStore
	SessionModes ports.SessionModeStore
	Quotas       ports.QuotaStore
	// The login ports are used by the OIDC mode only.
	LoginSessions ports.LoginSessionStore
	AuthRequests  ports.AuthRequestStore
	LoginThrottle ports.LoginThrottle
	// LoginWatch reports the changes of every instance to what is kept in
	// memory (login sessions, managed keys): one watcher of the store,
	// shared.
	LoginWatch ports.LoginSessionWatcher
	// Keys are the managed API keys, in every mode but hybrid.
	Keys ports.APIKeyStore
	// Connections are people's connections to servers' upstreams.
	Connections ports.ConnectionStore
	// Ping is the readiness check of the database.
	Ping func(context.Context) error
	// Intents records the changes whose audit record never came (see
	// recovery.go).
	Intents ports.IntentRecovery
	// Shared is set for a store other instances may write to at the same
	// time (PostgreSQL).
	Shared bool
}

// storeSet provides each store port from the configured store.
var storeSet = gwire.NewSet(openStores, useCaseStores, gwire.FieldsOf(new(Stores),
	"Sessions", "Audit", "Checkpoints", "Settings", "Projects", "Catalog", "Policies", "Agents", "ToolCalls", "SessionModes"))

// useCaseStores are the ports app.NewApplication builds the use cases on.
func useCaseStores(st Stores) app.Stores {
	return app.Stores{Sessions: st.Sessions, Audit: st.Audit, Checkpoints: st.Checkpoints, Settings: st.Settings, Projects: st.Projects,
		Catalog: st.Catalog, Policies: st.Policies, Agents: st.Agents, ToolCalls: st.ToolCalls, SessionModes: st.SessionModes, Quotas: st.Quotas,
		Connections: st.Connections}
}

// loginStoreFields provides the login ports from the same store, for a set
// that includes storeSet (OIDC mode); it is kept apart so that modes without
// logins do not carry them.
var loginStoreFields = gwire.FieldsOf(new(Stores), "LoginSessions", "AuthRequests", "LoginThrottle", "LoginWatch")

// store is what a store adapter must implement to back Stores.
type store interface {
	ports.SessionStore
	ports.AuditStore
	ports.AuditCheckpointStore
	ports.SettingsStore
	ports.ProjectStore
	ports.CatalogStore
	ports.PolicyStore
	ports.AgentStore
	ports.ToolCallStore
	ports.SessionModeStore
	ports.QuotaStore
	ports.LoginSessionStore
	ports.AuthRequestStore
	ports.LoginThrottle
	ports.LoginSessionWatcher
	ports.APIKeyStore
	ports.ConnectionStore
	Ping(ctx context.Context) error
}

func storesOf(s store) Stores {
	return Stores{
		Sessions: s, Audit: s, Checkpoints: s, Settings: s,
		Projects: s, Catalog: s, Policies: s, Agents: s, ToolCalls: s, SessionModes: s, Quotas: s,
		LoginSessions: s, AuthRequests: s, LoginThrottle: s, LoginWatch: s, Keys: s, Connections: s,
		Ping: s.Ping,
	}
}

// openStores opens PostgreSQL when a database URL is configured, else the
// SQLite file in the data folder. The cleanup closes it.
func openStores(cfg config.Config, log *zap.Logger) (Stores, func(), error) {
	keep, err := cfg.Audit.RetentionPeriod()
	if err != nil {
		return Stores{}, nil, err
	}
	// Where retention writes the records it removes, on either store.
	archiveDir := filepath.Join(cfg.DataDir, "audit", "archive")
	if cfg.Database.URL != "" {
		st, cleanup, err := postgres.Open(context.Background(), postgres.URL(cfg.Database.URL), log)
		if err != nil {
			return Stores{}, nil, err
		}
		log.Info("store: PostgreSQL (shared by every instance on this database)")
		stores := storesOf(st)
		cleanup = watchShared(&stores, cleanup)
		// Many instances write: recovery claims intents in one
		// transaction of the database's own.
		stores.Intents, stores.Shared = st, true
		if keep == 0 {
			return stores, cleanup, nil
		}
		// Every instance tries each hour; one at a time applies it.
		r := postgres.AuditRetention{Keep: keep}
		if cfg.Audit.Archive {
			r.ArchiveDir = archiveDir
		}
		stop := st.RunAuditRetention(r)
		return stores, func() { stop(); cleanup() }, nil
	}
	st, cleanup, err := sqlite.Open(sqlitePath(cfg), log)
	if err != nil {
		return Stores{}, nil, err
	}
	// The audit chain's durable copy is an append-only log in the data
	// folder; the SQLite store is its index for queries.
	retention := auditlog.Retention{Keep: keep, Archive: cfg.Audit.Archive, ArchiveDir: archiveDir, Anchor: st.NewestCheckpointThrough, After: st.OldestCheckpointAfter}
	audit, closeAudit, err := auditlog.OpenDurable(filepath.Join(cfg.DataDir, "audit"), st, retention, log)
	if errors.Is(err, wal.ErrLocked) {
		err = fmt.Errorf("dataDir / SERVICE_DATA_DIR: %w: another agentauth serves this data folder, and one data folder serves one process (several instances need database.url)", err)
	}
	if err != nil {
		cleanup()
		return Stores{}, nil, err
	}
	log.Info("store: SQLite", zap.String("path", string(sqlitePath(cfg))))
	stores := storesOf(st)
	cleanup = watchShared(&stores, cleanup)
	stores.Audit = audit
	// Recovered records go into the log like every other record; the
	// index settles their intents.
	stores.Intents = app.NewIntentRecovery(st, audit, app.SystemClock{})
	return stores, func() { closeAudit(); cleanup() }, nil
}

// watchShared puts one hub in front of the store's watcher, so that the
// login sessions and the managed keys share it (on PostgreSQL, one LISTEN
// connection); the returned cleanup stops it before closing the store.
func watchShared(stores *Stores, closeStore func()) func() {
	hub, stop := app.NewWatchHub(stores.LoginWatch)
	stores.LoginWatch = hub
	return func() { stop(); closeStore() }
}
