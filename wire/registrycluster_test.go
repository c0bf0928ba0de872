package wire_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
)

// TestClusterRegistry: two instances on one PostgreSQL database keep the
// settings, the registered tools and the policy version in memory. The
// security gateway turned on, a tool registered, a deny rule created or
// deleted on A is enforced by the first decision B takes after A's answer,
// although B had just decided the same call from memory: A answers only
// once every instance has acknowledged the database's report of the
// change. Five rounds.
func TestClusterRegistry(t *testing.T) {
	dbURL := pgtest.URL(t)
	checkRegistry(t, startInstance(t, dbURL), startInstance(t, dbURL))
}

// TestRegistryOnSQLite: the same with one instance on SQLite, which
// forgets the registry itself.
func TestRegistryOnSQLite(t *testing.T) {
	in := startInstance(t, "")
	checkRegistry(t, in, in)
}

// checkRegistry changes the registry on a and decides on b, five rounds,
// each with its own server and tool.
func checkRegistry(t *testing.T, a, b *instance) {
	t.Helper()
	mustCall(t, http.StatusCreated, http.MethodPost, a.url+"/api/v2/policies", clusterKey, map[string]string{"effect": "allow", "tool": "*", "scope": "role", "value": "ADMIN"})
	session := mustCall(t, http.StatusCreated, http.MethodPost, a.url+"/api/v2/sessions", clusterKey, map[string]string{"title": "registry", "mode": "auto"})["id"].(string)
	agent := mustCall(t, http.StatusCreated, http.MethodPost, a.url+"/api/v2/sessions/"+session+"/agents", clusterKey, nil)["id"].(string)
	gateway := func(on bool) {
		mustCall(t, http.StatusOK, http.MethodPut, a.url+"/api/v2/admin/settings", clusterKey, map[string]any{"security_gateway": on, "default_session_mode": "ask"})
	}
	t.Cleanup(func() { gateway(false) })
	for round := range 5 {
		server, tool := fmt.Sprintf("srv%d", round), fmt.Sprintf("srv%d.read", round)
		// decided is B's decision, taken twice (the first reads the
		// database, the second memory) so that the next is decided after
		// one from memory.
		decided := func(step, want string) {
			t.Helper()
			for range 2 {
				got := mustCall(t, http.StatusCreated, http.MethodPost, b.url+"/api/v2/sessions/"+session+"/tool-calls", clusterKey,
					map[string]string{"agent": agent, "tool": tool})
				if got["decision"] != want {
					t.Fatalf("round %d, %s: B decided %v (%v), want %s", round, step, got["decision"], got["reason"], want)
				}
			}
		}
		decided("gateway off, tool unregistered", "allow")
		gateway(true)
		decided("A turned the gateway on", "deny")
		mustCall(t, http.StatusCreated, http.MethodPost, a.url+"/api/v2/servers", clusterKey, map[string]string{"name": server, "url": "https://agentauth.test/mcp/" + server})
		decided("A registered the server, not the tool", "deny")
		mustCall(t, http.StatusCreated, http.MethodPost, a.url+"/api/v2/tools", clusterKey, map[string]any{"name": tool, "server": server})
		decided("A registered the tool", "allow")
		rule := mustCall(t, http.StatusCreated, http.MethodPost, a.url+"/api/v2/policies", clusterKey, map[string]string{"effect": "deny", "tool": tool, "scope": "role", "value": "ADMIN"})["id"].(string)
		decided("A denied the tool", "deny")
		mustCall(t, http.StatusNoContent, http.MethodDelete, a.url+"/api/v2/policies/"+rule, clusterKey, nil)
		decided("A deleted the rule", "allow")
		gateway(false)
	}
}
