package postgres_test

import (
	"testing"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/ports/porttest"
)

func TestAccessStore(t *testing.T) {
	porttest.RunAccessStore(t, func(t *testing.T) porttest.AccessStore { return newStore(t) })
}

func TestSharedAccessStore(t *testing.T) {
	porttest.RunSharedAccessStore(t, func(t *testing.T, n int) []porttest.AccessStore {
		url := pgtest.URL(t)
		out := make([]porttest.AccessStore, n)
		for i := range out {
			out[i] = open(t, url)
		}
		return out
	})
}
