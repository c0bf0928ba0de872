package sqlite

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentauth/agentauth/ports"
)

// CapAtPresentSize lets the database grow no further (PRAGMA max_page_count
// on the write connection, its only one): the next page it needs fails
// with SQLITE_FULL, "database or disk is full", as on a full disk.
func CapAtPresentSize(ctx context.Context, s *Store) error {
	var pages int
	if err := s.write.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		return err
	}
	_, err := s.write.ExecContext(ctx, "PRAGMA max_page_count = "+strconv.Itoa(pages))
	return err
}

// ListQueryPlans is EXPLAIN QUERY PLAN, one line per step, of the query of
// every paged list for representative filters, on a later page (after a
// cursor) and with one source or several (a LEAD's sessions).
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
		"tool calls, session": func() (string, []any) { return toolCallsQuery(ports.ToolCallFilter{Session: "s1", Page: page}) },
		"tool calls, all":     func() (string, []any) { return toolCallsQuery(ports.ToolCallFilter{Page: page}) },
		"agents, session":     func() (string, []any) { return agentsQuery("s1", page) },
		"projects, all":       func() (string, []any) { return projectsQuery(ports.ProjectFilter{Page: page}) },
		"projects, member":    func() (string, []any) { return projectsQuery(ports.ProjectFilter{Member: "alice", Page: page}) },
		"servers":             func() (string, []any) { return serversQuery(page) },
		"tools":               func() (string, []any) { return toolsQuery(page) },
		"policies":            func() (string, []any) { return policiesQuery(page) },
		"api keys, all":       func() (string, []any) { return apiKeysQuery("", page) },
		"api keys, owner":     func() (string, []any) { return apiKeysQuery("alice", page) },
		"service accounts":    func() (string, []any) { return keyOwnersQuery(true, page) },
		"connections, all":    func() (string, []any) { return connectionsQuery("", page) },
		"connections, person": func() (string, []any) { return connectionsQuery("alice", page) },
		"project members":     func() (string, []any) { return membersQuery("p1", page) },
	}
	out := map[string]string{}
	for name, q := range queries {
		query, args := q()
		rows, err := s.read.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
		if err != nil {
			return nil, err
		}
		var lines []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				rows.Close()
				return nil, err
			}
			lines = append(lines, detail)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		out[name] = strings.Join(lines, "\n")
	}
	return out, nil
}

// BulkSessions inserts n sessions of owner in one transaction, the newest
// last (the API's path commits and syncs each one).
func BulkSessions(ctx context.Context, s *Store, owner string, n int) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // after Commit, a no-op
	start := time.Date(2026, 1, 1, 0, 0, 0, 123456789, time.UTC)
	for i := range n {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions (id, owner, project, title, mode, state, created_at, owner_roles)
			VALUES (?, ?, '', 'bulk session', 'ask', 'active', ?, 'USER')`, fmt.Sprintf("sess_%08d", i), owner, start.Add(time.Duration(i)*time.Second).UnixNano()); err != nil {
			return err
		}
	}
	return tx.Commit()
}
