// Package wire composes agentauth for each deployment with Google Wire: one
// injector per authentication mode in wire.go (built only under the
// wireinject tag), generated into wire_gen.go, which is committed. main
// picks the injector that matches the configured mode.
//
// The store is not a dimension of injectors: every injector includes
// storeSet, whose provider opens PostgreSQL when database.url is set and
// SQLite otherwise, and hands out each store port from that one store (see
// store.go). Choosing at run time keeps one injector per mode instead of one
// per mode and store, and both stores must implement every port for it to
// compile.
package wire

import (
	"context"
	"crypto/ed25519"

	gwire "github.com/google/wire"

	"github.com/agentauth/agentauth/adapters/agenttoken"
	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/adapters/auditsign"
	"github.com/agentauth/agentauth/adapters/identity/apikey"
	"github.com/agentauth/agentauth/adapters/identity/local"
	"github.com/agentauth/agentauth/adapters/rest"
	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/adapters/telemetry"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// appSet provides the use cases: app.NewApplication, the constructor the
// tests build their servers with too, from the mode's dependencies (see
// application).
var appSet = gwire.NewSet(
	application, gwire.Struct(new(app.Dependencies), "*"), auditKey,
	gwire.InterfaceValue(new(ports.Clock), app.SystemClock{}),
)

// application builds the use cases and keeps what requests read of the
// agent sessions and their agents, and of the registry, in memory on the
// store's shared watcher; the returned function stops watching.
func application(d app.Dependencies, st Stores) (app.Application, func()) {
	a := app.NewApplication(d)
	stopRecords, stopRegistry := a.Records.KeepInMemory(st.LoginWatch), a.Registry.KeepInMemory(st.LoginWatch)
	return a, func() { stopRegistry(); stopRecords() }
}

// settingsSet turns the configuration into the named values adapters take
// (the edge's configuration, which differs by mode, aside).
var settingsSet = gwire.NewSet(targetRedactor, readyChecks, dataDir, apiKey, authorizer, auditOptions, auditSignSettings,
	agentTokenSettings, agentTokenLimits, agentTokenRateLimit, managedKeys, roleKeys)

// coreSet is everything but the identity adapter and the edge's
// configuration: store (chosen at run time, see store.go), audit log, use
// cases and the HTTP edge with the MCP gateway's.
var coreSet = gwire.NewSet(settingsSet, storeSet, auditsign.New, auditSet, appSet, rest.Set, gatewaySettings, gatewayEdge, agentTokenSet, approvalNotifier,
	connectionsSettings)

// agentTokenSet provides agent credentials: the signer, the use case and
// their endpoints.
var agentTokenSet = gwire.NewSet(agenttoken.Set,
	gwire.Bind(new(rest.KeySet), new(*agenttoken.Signer)), gwire.Struct(new(rest.AgentTokens), "*"))

func agentTokenSettings(cfg config.Config) (agenttoken.Settings, error) {
	until, err := cfg.Auth.AgentTokens.PreviousUntil()
	return agenttoken.Settings{Issuer: cfg.TokenIssuer(), Key: cfg.Auth.AgentTokens.SigningKey, DataDir: cfg.DataDir,
		PreviousKey: cfg.Auth.AgentTokens.PreviousKey, PreviousUntil: until}, err
}

func agentTokenLimits(cfg config.Config) app.AgentTokenLimits {
	return app.AgentTokenLimits{MaxTTL: cfg.Auth.AgentTokens.MaxTTL, MaxSubAgents: cfg.Auth.AgentTokens.MaxSubAgents}
}

func agentTokenRateLimit(cfg config.Config) rest.RateLimit {
	return rest.RateLimit{PerMinute: cfg.Auth.AgentTokens.RateLimit}
}

func restConfig(cfg config.Config, tokens *rest.AgentTokens, gateway *rest.Gateway, ready rest.ReadyChecks,
	redactor *domain.TargetRedactor) (rest.Config, error) {
	proxies, err := cfg.TrustedProxies()
	if err != nil {
		return rest.Config{}, err
	}
	return rest.Config{Addr: cfg.Addr(), ManagementAddr: cfg.ManagementAddr(), PublicAddr: cfg.PublicAddr(), Debug: cfg.Mode() == config.ModeDebug,
		ShutdownTimeout: cfg.Server.ShutdownTimeout, TrustedProxies: proxies, AgentTokens: tokens, Ready: ready,
		BasePath: cfg.Server.BasePath, Redactor: redactor, Gateway: gateway}, nil
}

// targetRedactor is the rule that hides credentials in recorded request
// targets, keyed by a key derived from the audit signing key: instances on
// one database share that key (config requires it), so their markers of
// one credential agree, and no further secret is to be kept.
func targetRedactor(cfg config.Config, signer *auditsign.Checkpointer) (*domain.TargetRedactor, error) {
	return domain.NewTargetRedactor(signer.DeriveKey("agentauth request-target redaction v1"), cfg.Audit.RedactQueryParams)
}

// readyChecks are what requests need besides the identity provider: the
// database answers and the audit log takes records.
func readyChecks(st Stores, audit *auditlog.Committer) rest.ReadyChecks {
	database := func(ctx context.Context) error {
		err := st.Ping(ctx)
		telemetry.DatabaseProbed(err)
		return err
	}
	return rest.ReadyChecks{{Name: "database", Probe: database}, {Name: "audit_log", Probe: audit.Ready}}
}

func sqlitePath(cfg config.Config) sqlite.Path { return sqlite.Path(cfg.DataDir + "/agentauth.db") }

func auditOptions(cfg config.Config, signer *auditsign.Checkpointer) auditlog.Options {
	return auditlog.Options{BatchWait: cfg.Audit.BatchWait, Observer: signer}
}

func auditSignSettings(cfg config.Config) auditsign.Settings {
	return auditsign.Settings{Key: cfg.Audit.SigningKey, KeyFile: cfg.Audit.SigningKeyFile, DataDir: cfg.DataDir,
		Every: cfg.Audit.CheckpointEvery, Interval: cfg.Audit.CheckpointInterval}
}

// auditKey verifies the audit log's checkpoints: the signer's.
func auditKey(signer *auditsign.Checkpointer) ed25519.PublicKey { return signer.PublicKey() }

func dataDir(cfg config.Config) local.DataDir { return local.DataDir(cfg.DataDir) }

func apiKey(cfg config.Config) apikey.Key { return apikey.Key(cfg.Auth.APIKey) }

func authorizer(cfg config.Config) (*domain.Authorizer, error) { return cfg.Authorizer() }

// managedKeys is the managed API keys' use case, kept in memory on the
// store's shared watcher; nil in hybrid mode, where keys are the centre's
// (an aak_ credential goes to the centre like any other).
func managedKeys(cfg config.Config, st Stores, authz *domain.Authorizer, clock ports.Clock) (*app.APIKeys, func(), error) {
	if cfg.Mode() == config.ModeHybrid {
		return nil, func() {}, nil
	}
	k, err := app.NewAPIKeys(app.APIKeysConfig{MaxTTL: cfg.Auth.APIKeys.MaxTTL, MaxPerOwner: cfg.Auth.APIKeys.MaxPerOwner,
		Configured: cfg.RoleKeyRoles(), ConfiguredSubjects: config.RoleKeySubjects}, st.Keys, st.Projects, authz, clock)
	if err != nil {
		return nil, nil, err
	}
	return k, k.KeepInMemory(st.LoginWatch), nil
}
