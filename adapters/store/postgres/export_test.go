package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentauth/agentauth/ports"
)

// RetentionLock is the advisory lock key expression, for tests that hold it.
const RetentionLock = retentionLock

// ListQueryPlans is EXPLAIN of the query of every paged list for
// representative filters, on a later page (after a cursor) and with one
// source or several (a LEAD's sessions). The tables of a test are tiny,
// where a sequential scan and a sort win; with both priced out of reach
// (enable_seqscan, enable_sort off) a plan that still has one has no index
// that could serve it.
func ListQueryPlans(ctx context.Context, s *Store) (map[string]string, error) {
	page := ports.Page{Limit: 51, After: ports.CursorOf(time.Unix(1_800_000_000, 0), "s-x")}
	queries := map[string]func() (string, []any){
		"sessions, all":   func() (string, []any) { return sessionsQuery(ports.SessionFilter{Page: page}) },
		"sessions, owner": func() (string, []any) { return sessionsQuery(ports.SessionFilter{Owner: "alice", Page: page}) },
		"sessions, project": func() (string, []any) {
			return sessionsQuery(ports.SessionFilter{Projects: []string{"p1"}, Page: page})
		},
		"sessions, owner or projects": func() (string, []any) {
			return sessionsQuery(ports.SessionFilter{Owner: "alice", Projects: []string{"p1", "p2"}, Page: page})
		},
		"tool calls, session":              func() (string, []any) { return toolCallsQuery(ports.ToolCallFilter{Session: "s1", Page: page}) },
		"tool calls, all":                  func() (string, []any) { return toolCallsQuery(ports.ToolCallFilter{Page: page}) },
		"agents, session":                  func() (string, []any) { return agentsQuery("s1", page) },
		"projects, all":                    func() (string, []any) { return projectsQuery(ports.ProjectFilter{Page: page}) },
		"projects, member":                 func() (string, []any) { return projectsQuery(ports.ProjectFilter{Member: "alice", Page: page}) },
		"servers":                          func() (string, []any) { return serversQuery(page) },
		"tools":                            func() (string, []any) { return toolsQuery(page) },
		"policies":                         func() (string, []any) { return policiesQuery(page) },
		"api keys, all":                    func() (string, []any) { return apiKeysQuery("", page) },
		"api keys, owner":                  func() (string, []any) { return apiKeysQuery("alice", page) },
		"service accounts":                 func() (string, []any) { return keyOwnersQuery(true, page) },
		"connections, all":                 func() (string, []any) { return connectionsQuery("", page) },
		"connections, person":              func() (string, []any) { return connectionsQuery("alice", page) },
		"project members":                  func() (string, []any) { return membersQuery("p1", page) },
		"project members, first of a page": func() (string, []any) { return firstMembersQuery([]string{"p1", "p2"}, 51) },
	}
	out := map[string]string{}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off`); err != nil {
			return err
		}
		for name, q := range queries {
			query, args := q()
			rows, _ := tx.Query(ctx, "EXPLAIN "+query, args...)
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			out[name] = strings.Join(lines, "\n")
		}
		return nil
	})
	return out, err
}
