package sqlite_test

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/adapters/store/sqlite"
)

// TestListPlansUseIndexes: every paged list reads its rows through an
// index ending in (created_at, key), in the list's order, so a page stops
// after its LIMIT: no step scans a table, and a single-source list sorts
// nothing. Two lists sort a bounded set: a LEAD's sessions merge one such
// page per source (at most (1 + projects) × limit rows); a member's
// projects are found by its memberships (project_members_subject), then
// ordered.
func TestListPlansUseIndexes(t *testing.T) {
	st := open(t, filepath.Join(t.TempDir(), "plans.db"))
	plans, err := sqlite.ListQueryPlans(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	ours := regexp.MustCompile(`^(SCAN|SEARCH) \w+ USING (COVERING )?INDEX (\w+_created_(id|name)|project_members_subject|api_key_owners_service_subject|sqlite_autoindex_projects_1|sqlite_autoindex_project_members_1)\b`)
	for name, plan := range plans {
		merged := name == "sessions, owner or projects" || name == "projects, member"
		for _, step := range strings.Split(plan, "\n") {
			switch {
			case strings.HasPrefix(step, "SCAN") && !strings.Contains(step, "INDEX") && !strings.HasPrefix(step, "SCAN (subquery") && !merged:
				t.Errorf("%s: a table scan: %q\nplan:\n%s", name, step, plan)
			case (strings.HasPrefix(step, "SCAN") || strings.HasPrefix(step, "SEARCH")) && strings.Contains(step, "INDEX") && !ours.MatchString(step):
				t.Errorf("%s: a step not on a keyset index: %q\nplan:\n%s", name, step, plan)
			case strings.Contains(step, "TEMP B-TREE") && !merged:
				t.Errorf("%s: sorts: %q\nplan:\n%s", name, step, plan)
			}
		}
		t.Logf("%s:\n%s", name, plan)
	}
}
