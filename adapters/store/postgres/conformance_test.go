package postgres_test

import (
	"context"
	"testing"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/postgres"
	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/app/apptest"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/porttest"
)

// open opens a store on url and closes it when the test ends.
func open(t testing.TB, url string) *postgres.Store {
	t.Helper()
	st, closeStore, err := postgres.Open(context.Background(), postgres.URL(url), zap.NewNop())
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	t.Cleanup(closeStore)
	return st
}

func newStore(t *testing.T) *postgres.Store { return open(t, pgtest.URL(t)) }

func TestSessionStore(t *testing.T) {
	porttest.RunSessionStore(t, func(t *testing.T) ports.SessionStore { return newStore(t) })
}

func TestAuditStore(t *testing.T) {
	porttest.RunAuditStore(t, func(t *testing.T) ports.AuditStore { return newStore(t) })
}

func TestSharedAuditStore(t *testing.T) {
	porttest.RunSharedAuditStore(t, sharedStores[ports.AuditStore])
}

func TestCheckpointStore(t *testing.T) {
	porttest.RunCheckpointStore(t, func(t *testing.T) ports.AuditCheckpointStore { return newStore(t) })
}

func TestSharedCheckpointStore(t *testing.T) {
	porttest.RunSharedCheckpointStore(t, sharedStores[ports.AuditCheckpointStore])
}

func TestSettingsStore(t *testing.T) {
	porttest.RunSettingsStore(t, func(t *testing.T) ports.SettingsStore { return newStore(t) })
}

func TestLoginStore(t *testing.T) {
	porttest.RunLoginStore(t, func(t *testing.T) porttest.LoginStore { return newStore(t) })
}

func TestLoginSessionWatcher(t *testing.T) {
	porttest.RunLoginSessionWatcher(t, func(t *testing.T) porttest.WatchedLoginStore { return newStore(t) })
}

func TestSharedLoginStore(t *testing.T) {
	porttest.RunSharedLoginStore(t, sharedStores[porttest.LoginStore])
}

func TestAccessStore(t *testing.T) {
	porttest.RunAccessStore(t, func(t *testing.T) porttest.AccessStore { return newStore(t) })
}

func TestSharedAccessStore(t *testing.T) {
	porttest.RunSharedAccessStore(t, sharedStores[porttest.AccessStore])
}

// sharedStores opens n stores on one database, as n instances would.
func sharedStores[T any](t *testing.T, n int) []T {
	url := pgtest.URL(t)
	out := make([]T, n)
	for i := range out {
		out[i] = any(open(t, url)).(T)
	}
	return out
}

func TestPasswordLimits(t *testing.T) {
	apptest.RunPasswordLimits(t, sharedStores[porttest.LoginStore])
}

func TestIntentStore(t *testing.T) {
	porttest.RunIntentStore(t, func(t *testing.T) porttest.IntentStore { return newStore(t) })
}

func TestAPIKeyStore(t *testing.T) {
	porttest.RunAPIKeyStore(t, func(t *testing.T) porttest.APIKeyStore { return newStore(t) })
}

func TestSharedAPIKeyStore(t *testing.T) {
	porttest.RunSharedAPIKeyStore(t, sharedStores[ports.APIKeyStore])
}

func TestSessionWatcher(t *testing.T) {
	porttest.RunSessionWatcher(t, func(t *testing.T) porttest.WatchedSessionStore { return newStore(t) })
}

func TestRegistryWatcher(t *testing.T) {
	porttest.RunRegistryWatcher(t, func(t *testing.T) porttest.WatchedRegistryStore { return newStore(t) })
}

func TestConnectionStore(t *testing.T) {
	porttest.RunConnectionStore(t, func(t *testing.T) porttest.ConnectionStore { return newStore(t) })
}

func TestSharedConnectionStore(t *testing.T) {
	porttest.RunSharedConnectionStore(t, sharedStores[ports.ConnectionStore])
}

func TestConnections(t *testing.T) {
	apptest.RunConnections(t, func(t *testing.T) porttest.ConnectionStore { return newStore(t) })
}

func TestSharedConnections(t *testing.T) {
	apptest.RunSharedConnections(t, sharedStores[porttest.ConnectionStore])
}
