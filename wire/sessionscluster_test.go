package wire_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
)

// listedSessions is the first page of GET /api/v2/sessions on in, by ID.
func listedSessions(t *testing.T, in *instance) map[string]string {
	t.Helper()
	status, _, body := call(t, http.MethodGet, in.url+"/api/v2/sessions", clusterKey, nil)
	var page struct {
		Sessions []struct{ ID, Mode string } `json:"sessions"`
	}
	if err := json.Unmarshal(body, &page); status != http.StatusOK || err != nil {
		t.Fatalf("GET /api/v2/sessions on %s = %d %s", in.url, status, body)
	}
	modes := map[string]string{}
	for _, s := range page.Sessions {
		modes[s.ID] = s.Mode
	}
	return modes
}

// TestClusterSessionLists: two instances on one PostgreSQL database keep
// the first page of session lists in memory. A session created, changed
// or deleted on A is as A answered it in the first list B serves after
// A's answer, although B had just served that list from memory: A answers
// only once every instance has acknowledged the database's report of the
// change. Ten rounds.
func TestClusterSessionLists(t *testing.T) {
	dbURL := pgtest.URL(t)
	checkSessionLists(t, startInstance(t, dbURL), startInstance(t, dbURL))
}

// TestSessionListsOnSQLite: the same with one instance on SQLite, which
// forgets its lists itself.
func TestSessionListsOnSQLite(t *testing.T) {
	in := startInstance(t, "")
	checkSessionLists(t, in, in)
}

// checkSessionLists writes sessions on a and lists them on b, ten rounds.
func checkSessionLists(t *testing.T, a, b *instance) {
	t.Helper()
	warm := func() {
		for range 2 { // the first read from the database, the second from memory
			listedSessions(t, b)
		}
	}
	for round := range 10 {
		warm()
		status, _, body := call(t, http.MethodPost, a.url+"/api/v2/sessions", clusterKey, map[string]any{"title": "cluster", "mode": "ask"})
		var made struct{ ID string }
		if err := json.Unmarshal(body, &made); status != http.StatusCreated || err != nil {
			t.Fatalf("round %d: POST /api/v2/sessions on A = %d %s", round, status, body)
		}
		if mode, ok := listedSessions(t, b)[made.ID]; !ok || mode != "ask" {
			t.Fatalf("round %d: B's list after A created %s: mode %q, listed %v; want ask", round, made.ID, mode, ok)
		}
		warm()
		if status, _, body := call(t, http.MethodPatch, a.url+"/api/v2/sessions/"+made.ID, clusterKey, map[string]any{"mode": "readonly"}); status != http.StatusOK {
			t.Fatalf("round %d: PATCH on A = %d %s", round, status, body)
		}
		if mode := listedSessions(t, b)[made.ID]; mode != "readonly" {
			t.Fatalf("round %d: B's list after A set readonly: mode %q", round, mode)
		}
		warm()
		if status, _, body := call(t, http.MethodDelete, a.url+"/api/v2/sessions/"+made.ID, clusterKey, nil); status != http.StatusNoContent {
			t.Fatalf("round %d: DELETE on A = %d %s", round, status, body)
		}
		if _, ok := listedSessions(t, b)[made.ID]; ok {
			t.Fatalf("round %d: B's list after A deleted %s still holds it", round, made.ID)
		}
	}
}

// TestClusterSessionRecords: two instances on one PostgreSQL database keep
// sessions and agents in memory, which an agent token's every use reads. B
// decides a call with an agent token A minted, twice (the second from
// memory); A sets the session read-only, and B's next decision denies the
// write; A deletes the session, and B refuses the token on its next use.
// Five rounds, each with its own session.
func TestClusterSessionRecords(t *testing.T) {
	dbURL := pgtest.URL(t)
	checkSessionRecords(t, startInstance(t, dbURL), startInstance(t, dbURL))
}

// TestSessionRecordsOnSQLite: the same with one instance on SQLite, which
// forgets its sessions itself.
func TestSessionRecordsOnSQLite(t *testing.T) {
	in := startInstance(t, "")
	checkSessionRecords(t, in, in)
}

func checkSessionRecords(t *testing.T, a, b *instance) {
	t.Helper()
	mustCall(t, http.StatusCreated, http.MethodPost, a.url+"/api/v2/servers", clusterKey, map[string]string{"name": "rec", "url": "https://agentauth.test/mcp/rec"})
	mustCall(t, http.StatusCreated, http.MethodPost, a.url+"/api/v2/tools", clusterKey, map[string]any{"name": "rec.write", "server": "rec"})
	mustCall(t, http.StatusCreated, http.MethodPost, a.url+"/api/v2/policies", clusterKey, map[string]string{"effect": "allow", "tool": "rec.*", "scope": "role", "value": "ADMIN"})
	for round := range 5 {
		session := mustCall(t, http.StatusCreated, http.MethodPost, a.url+"/api/v2/sessions", clusterKey, map[string]string{"title": "records", "mode": "auto"})["id"].(string)
		agent := mustCall(t, http.StatusCreated, http.MethodPost, a.url+"/api/v2/sessions/"+session+"/agents", clusterKey, nil)["id"].(string)
		token := mustCall(t, http.StatusOK, http.MethodPost, a.url+"/api/v2/sessions/"+session+"/agents/"+agent+"/token", clusterKey, map[string]string{"audience": "rec"})["access_token"].(string)
		calls := b.url + "/api/v2/sessions/" + session + "/tool-calls"
		decided := func(step, want string) {
			t.Helper()
			for range 2 { // the first reads the database, the second memory
				got := mustCall(t, http.StatusCreated, http.MethodPost, calls, token, map[string]string{"tool": "rec.write"})
				if got["decision"] != want {
					t.Fatalf("round %d, %s: B decided %v (%v), want %s", round, step, got["decision"], got["reason"], want)
				}
			}
		}
		decided("a new session", "allow")
		mustCall(t, http.StatusOK, http.MethodPatch, a.url+"/api/v2/sessions/"+session, clusterKey, map[string]any{"mode": "readonly"})
		decided("A set the session read-only", "deny")
		mustCall(t, http.StatusNoContent, http.MethodDelete, a.url+"/api/v2/sessions/"+session, clusterKey, nil)
		if status, _, got := call(t, http.MethodPost, calls, token, map[string]string{"tool": "rec.write"}); status != http.StatusUnauthorized {
			t.Fatalf("round %d: B's decision after A deleted the session = %d %s, want 401", round, status, got)
		}
	}
}
