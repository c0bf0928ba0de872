package postgres_test

import (
	"testing"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/ports/porttest"
)

func TestLoginStore(t *testing.T) {
	porttest.RunLoginStore(t, func(t *testing.T) porttest.LoginStore { return newStore(t) })
}

func TestSharedLoginStore(t *testing.T) {
	porttest.RunSharedLoginStore(t, func(t *testing.T, n int) []porttest.LoginStore {
		url := pgtest.URL(t)
		out := make([]porttest.LoginStore, n)
		for i := range out {
			out[i] = open(t, url)
		}
		return out
	})
}
