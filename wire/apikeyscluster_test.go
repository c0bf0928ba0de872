package wire_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/domain"
)

// TestClusterKeyRevocation: two instances on one PostgreSQL database keep
// managed keys in memory. A key made and revoked on A, and used on B in
// between (so B serves it from memory), is refused by B on the first
// request sent after A answered the revocation: A answers only once the
// database has announced the revocation to every instance. Twenty rounds,
// each with a new key.
func TestClusterKeyRevocation(t *testing.T) {
	dbURL := pgtest.URL(t)
	a, b := startInstance(t, dbURL), startInstance(t, dbURL)
	for round := range 20 {
		status, _, body := call(t, http.MethodPost, a.url+"/api/v2/keys", clusterKey, map[string]any{
			"name": "ci", "permissions": []string{"me:read"}, "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
		var made struct{ ID, Key string }
		if err := json.Unmarshal(body, &made); status != http.StatusCreated || err != nil {
			t.Fatalf("round %d: POST /api/v2/keys on A = %d %s", round, status, body)
		}
		for range 3 { // the first read from the database, the others from memory
			if status, _, body := call(t, http.MethodGet, b.url+"/api/v2/me", made.Key, nil); status != http.StatusOK {
				t.Fatalf("round %d: /me on B = %d %s", round, status, body)
			}
		}
		if status, _, body := call(t, http.MethodDelete, a.url+"/api/v2/keys/"+made.ID, clusterKey, nil); status != http.StatusNoContent {
			t.Fatalf("round %d: DELETE on A = %d %s", round, status, body)
		}
		status, _, body = call(t, http.MethodGet, b.url+"/api/v2/me", made.Key, nil)
		var e struct {
			Error struct {
				ReasonCode string `json:"reason_code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		if status != http.StatusUnauthorized || e.Error.ReasonCode != domain.ReasonKeyRevoked {
			t.Fatalf("round %d: B after A answered the revocation = %d %s, want 401 %s", round, status, body, domain.ReasonKeyRevoked)
		}
	}
}
