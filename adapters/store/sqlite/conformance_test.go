package sqlite_test

import (
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/porttest"
)

// open opens the database at path and closes it when the test ends.
func open(t *testing.T, path string) *sqlite.Store {
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
	porttest.RunSharedAuditStore(t, func(t *testing.T, n int) []ports.AuditStore {
		path := filepath.Join(t.TempDir(), "agentauth.db")
		out := make([]ports.AuditStore, n)
		for i := range out {
			out[i] = open(t, path)
		}
		return out
	})
}

func TestSettingsStore(t *testing.T) {
	porttest.RunSettingsStore(t, func(t *testing.T) ports.SettingsStore { return newStore(t) })
}

func TestLoginStoreConformance(t *testing.T) {
	porttest.RunLoginStore(t, func(t *testing.T) porttest.LoginStore { return newStore(t) })
}

func TestSharedLoginStore(t *testing.T) {
	porttest.RunSharedLoginStore(t, func(t *testing.T, n int) []porttest.LoginStore {
		path := filepath.Join(t.TempDir(), "agentauth.db")
		out := make([]porttest.LoginStore, n)
		for i := range out {
			out[i] = open(t, path)
		}
		return out
	})
}

func TestAccessStoreConformance(t *testing.T) {
	porttest.RunAccessStore(t, func(t *testing.T) porttest.AccessStore { return newStore(t) })
}

func TestSharedAccessStore(t *testing.T) {
	porttest.RunSharedAccessStore(t, func(t *testing.T, n int) []porttest.AccessStore {
		path := filepath.Join(t.TempDir(), "agentauth.db")
		out := make([]porttest.AccessStore, n)
		for i := range out {
			out[i] = open(t, path)
		}
		return out
	})
}
