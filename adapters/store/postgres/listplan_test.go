package postgres_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/adapters/store/postgres"
)

// TestListPlansUseIndexes: every paged list reads its rows through an
// index ending in (created_at, key COLLATE "C"), in the list's order, so a
// page stops after its LIMIT: no step scans a table, and a single-source
// list sorts nothing. A LEAD's sessions merge one such page per source;
// only those pages, at most (1 + projects) × limit rows, are sorted. A
// member's projects are also matched with its memberships
// (project_members_subject); a project's members page by subject
// (project_members_project_subject).
func TestListPlansUseIndexes(t *testing.T) {
	plans, err := postgres.ListQueryPlans(context.Background(), newStore(t))
	if err != nil {
		t.Fatal(err)
	}
	indexScan := regexp.MustCompile(`Index (?:Only )?Scan (?:Backward )?using (\w+)`)
	ours := regexp.MustCompile(`^(\w+_created_(id|name)|project_members_subject|api_key_owners_service_subject|project_members_project_subject)$`)
	for name, plan := range plans {
		merged := name == "sessions, owner or projects"
		if strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s: a table scan:\n%s", name, plan)
		}
		if strings.Contains(plan, "Sort") && !merged {
			t.Errorf("%s: sorts:\n%s", name, plan)
		}
		scans := indexScan.FindAllStringSubmatch(plan, -1)
		keyset := 0
		for _, sc := range scans {
			if ours.MatchString(sc[1]) {
				keyset++
			}
		}
		if keyset == 0 || keyset != len(scans) || strings.Count(plan, "Limit") < keyset {
			t.Errorf("%s: %d index scans, %d on keyset indexes, %d limits; want each scan on one and limited:\n%s",
				name, len(scans), keyset, strings.Count(plan, "Limit"), plan)
		}
		t.Logf("%s:\n%s", name, plan)
	}
}
