package wire_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
)

// TestClusterAgentTokenKeySet: instances on one PostgreSQL database publish
// one agent-token key, the one configured (PostgreSQL mode requires it), so
// a token any of them mints verifies on every other and at tool servers
// reading any instance's key set.
func TestClusterAgentTokenKeySet(t *testing.T) {
	dbURL := pgtest.URL(t)
	kids := map[string]bool{}
	for _, in := range []*instance{startInstance(t, dbURL), startInstance(t, dbURL)} {
		status, _, body := call(t, http.MethodGet, in.url+"/.well-known/jwks.json", clusterKey, nil)
		var set struct {
			Keys []struct {
				KID string `json:"kid"`
			} `json:"keys"`
		}
		if err := json.Unmarshal(body, &set); status != http.StatusOK || err != nil || len(set.Keys) != 1 {
			t.Fatalf("GET /.well-known/jwks.json = %d %s (%v), want one key", status, body, err)
		}
		kids[set.Keys[0].KID] = true
	}
	if len(kids) != 1 {
		t.Errorf("instances on one database publish %d agent-token keys %v, want the one configured", len(kids), kids)
	}
}
