package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/app/apptest"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/porttest"
)

// open opens the database at path and closes it when the test ends.
func open(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	st, closeStore, err := sqlite.Open(sqlite.Path(path), zap.NewNop())
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(closeStore)
	return st
}

func newStore(t *testing.T) *sqlite.Store { return open(t, filepath.Join(t.TempDir(), "agentauth.db")) }

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
	path := filepath.Join(t.TempDir(), "agentauth.db")
	out := make([]T, n)
	for i := range out {
		out[i] = any(open(t, path)).(T)
	}
	return out
}

func TestPasswordLimits(t *testing.T) {
	apptest.RunPasswordLimits(t, sharedStores[porttest.LoginStore])
}

// intentStore is the store with the recovery SQLite mode uses
// (app.IntentRecovery: the store's outbox, records appended to the store).
type intentStore struct {
	*sqlite.Store
	recovery *app.IntentRecovery
}

func (s intentStore) RecoverIntents(ctx context.Context, cutoff time.Time) ([]domain.AuditRecord, error) {
	return s.recovery.RecoverIntents(ctx, cutoff)
}

func TestIntentStore(t *testing.T) {
	porttest.RunIntentStore(t, func(t *testing.T) porttest.IntentStore {
		st := newStore(t)
		return intentStore{st, app.NewIntentRecovery(st, st, app.SystemClock{})}
	})
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
