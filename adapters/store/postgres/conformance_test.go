package postgres_test

import (
	"context"
	"testing"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/postgres"
	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/porttest"
)

// open opens a store on url and closes it when the test ends.
func open(t *testing.T, url string) *postgres.Store {
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
	porttest.RunSharedAuditStore(t, func(t *testing.T, n int) []ports.AuditStore {
		url := pgtest.URL(t)
		out := make([]ports.AuditStore, n)
		for i := range out {
			out[i] = open(t, url)
		}
		return out
	})
}

func TestSettingsStore(t *testing.T) {
	porttest.RunSettingsStore(t, func(t *testing.T) ports.SettingsStore { return newStore(t) })
}
