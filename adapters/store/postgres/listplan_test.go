package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/adapters/store/postgres"
)

// TestListPlansUseIndexes: every paged list reads its rows through an
// index ending in (created_at, id COLLATE "C"), in the list's order, so a
// page stops after its LIMIT: no step scans a table, and a single-source
// list sorts nothing. A LEAD's sessions merge one such page per source;
// only those pages, at most (1 + projects) × limit rows, are sorted.
func TestListPlansUseIndexes(t *testing.T) {
	plans, err := postgres.ListQueryPlans(context.Background(), newStore(t))
	if err != nil {
		t.Fatal(err)
	}
	for name, plan := range plans {
		merged := strings.Contains(name, " or ")
		if strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s: a table scan:\n%s", name, plan)
		}
		if strings.Contains(plan, "Sort") && !merged {
			t.Errorf("%s: sorts:\n%s", name, plan)
		}
		scans, limits := strings.Count(plan, "Index Scan")+strings.Count(plan, "Index Only Scan"), strings.Count(plan, "Limit")
		if scans == 0 || strings.Count(plan, "_created_id") != scans || limits < scans {
			t.Errorf("%s: %d index scans, %d on keyset indexes, %d limits; want each scan on one and limited:\n%s",
				name, scans, strings.Count(plan, "_created_id"), limits, plan)
		}
		t.Logf("%s:\n%s", name, plan)
	}
}
