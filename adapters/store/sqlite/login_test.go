package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/agentauth/agentauth/ports/porttest"
)

func TestLoginStore(t *testing.T) {
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
