package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

var (
	_ ports.ProjectStore     = (*Store)(nil)
	_ ports.CatalogStore     = (*Store)(nil)
	_ ports.PolicyStore      = (*Store)(nil)
	_ ports.AgentStore       = (*Store)(nil)
	_ ports.ToolCallStore    = (*Store)(nil)
	_ ports.SessionModeStore = (*Store)(nil)
)

// isUnique reports a UNIQUE or PRIMARY KEY violation.
func isUnique(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// CreateProject inserts a project with its members.
func (s *Store) CreateProject(ctx context.Context, p domain.Project) error {
	return s.change(ctx, "create project "+p.ID, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO projects (id, name, created_by, created_at) VALUES (?, ?, ?, ?)`,
			p.ID, p.Name, p.CreatedBy, nanos(p.CreatedAt))
		if isUnique(err) {
			return fmt.Errorf("project %s already exists: %w", p.ID, domain.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("sqlite: insert project: %w", err)
		}
		return insertMembers(ctx, tx, p.ID, p.Members)
	})
}

func insertMembers(ctx context.Context, tx *sql.Tx, project string, members []domain.Member) error {
	for _, m := range members {
		_, err := tx.ExecContext(ctx, `INSERT INTO project_members (project, subject, lead) VALUES (?, ?, ?)`, project, m.Subject, boolInt(m.Lead))
		if isUnique(err) {
			return fmt.Errorf("member %q is listed twice: %w", m.Subject, domain.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("sqlite: insert project member: %w", err)
		}
	}
	return nil
}

// GetProject reads one project.
func (s *Store) GetProject(ctx context.Context, id string) (domain.Project, error) {
	list, err := s.queryProjects(ctx, 0, `SELECT id, name, created_by, created_at FROM projects WHERE id = ?`, id)
	if err != nil {
		return domain.Project{}, err
	}
	if len(list) == 0 {
		return domain.Project{}, fmt.Errorf("project %s: %w", id, domain.ErrNotFound)
	}
	return list[0], nil
}

// ListProjects returns a page of projects newest first.
func (s *Store) ListProjects(ctx context.Context, f ports.ProjectFilter) ([]domain.Project, error) {
	query, args := projectsQuery(f)
	members := 0
	if f.Limit > 0 {
		members = ports.EmbeddedMembers + 1
	}
	return s.queryProjects(ctx, members, query, args...)
}

// projectsQuery is the query of ListProjects.
func projectsQuery(f ports.ProjectFilter) (string, []any) {
	var (
		where []string
		args  []any
	)
	if f.Member != "" {
		where, args = append(where, "id IN (SELECT project FROM project_members WHERE subject = ?)"), append(args, f.Member)
	}
	tail, args := keyset(where, args, f.Page, "id")
	return `SELECT id, name, created_by, created_at FROM projects` + tail, args
}

// queryProjects reads the projects of query with their members: all of
// them, or when members > 0 the first members of each by subject.
func (s *Store) queryProjects(ctx context.Context, members int, query string, args ...any) ([]domain.Project, error) {
	rows, err := s.queryRows(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: query projects: %w", err)
	}
	out := []domain.Project{}
	index := map[string]int{}
	for rows.Next() {
		var (
			p       domain.Project
			created int64
		)
		if err := rows.Scan(&p.ID, &p.Name, &p.CreatedBy, &created); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlite: scan project: %w", err)
		}
		p.CreatedAt = fromNanos(created)
		index[p.ID] = len(out)
		out = append(out, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: query projects: %w", err)
	}
	if len(out) == 0 {
		return out, nil
	}
	if members > 0 {
		return out, s.firstMembers(ctx, out, members)
	}
	ids := make([]any, 0, len(out))
	for _, p := range out {
		ids = append(ids, p.ID)
	}
	mrows, err := s.queryRows(ctx, `SELECT project, subject, lead FROM project_members WHERE project IN (?`+
		strings.Repeat(",?", len(ids)-1)+`) ORDER BY project, subject`, ids...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: query project members: %w", err)
	}
	defer mrows.Close()
	for mrows.Next() {
		var (
			project string
			m       domain.Member
			lead    int
		)
		if err := mrows.Scan(&project, &m.Subject, &lead); err != nil {
			return nil, fmt.Errorf("sqlite: scan project member: %w", err)
		}
		m.Lead = lead != 0
		i := index[project]
		out[i].Members = append(out[i].Members, m)
	}
	return out, mrows.Err()
}

// firstMembers reads the first n members of each project by subject, a
// range of the primary key (project, subject) each: SQLite has no LATERAL
// join, and one query for the page's projects would read every member of
// each to keep n.
func (s *Store) firstMembers(ctx context.Context, projects []domain.Project, n int) error {
	for i := range projects {
		query, args := membersQuery(projects[i].ID, ports.Page{Limit: n})
		list, err := s.listMembers(ctx, query, args...)
		if err != nil {
			return err
		}
		projects[i].Members = list
	}
	return nil
}

// ListMembers returns a page of a project's members by subject.
func (s *Store) ListMembers(ctx context.Context, project string, page ports.Page) ([]domain.Member, error) {
	query, args := membersQuery(project, page)
	return s.listMembers(ctx, query, args...)
}

func (s *Store) listMembers(ctx context.Context, query string, args ...any) ([]domain.Member, error) {
	rows, err := s.queryRows(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list project members: %w", err)
	}
	defer rows.Close()
	out := []domain.Member{}
	for rows.Next() {
		var (
			m    domain.Member
			lead int
		)
		if err := rows.Scan(&m.Subject, &lead); err != nil {
			return nil, fmt.Errorf("sqlite: scan project member: %w", err)
		}
		m.Lead = lead != 0
		out = append(out, m)
	}
	return out, rows.Err()
}

// membersQuery is the query of ListMembers: a range of the primary key
// (project, subject).
func membersQuery(project string, page ports.Page) (string, []any) {
	return `SELECT subject, lead FROM project_members WHERE project = ? AND subject > ? ORDER BY subject LIMIT ?`,
		[]any{project, page.After.Key, limitArg(page.Limit)}
}

// SetMembers replaces the members of a project.
func (s *Store) SetMembers(ctx context.Context, id string, members []domain.Member) error {
	return s.change(ctx, "set the members of project "+id, func(ctx context.Context, tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM projects WHERE id = ?`, id).Scan(&n); err != nil {
			return fmt.Errorf("sqlite: read project: %w", err)
		}
		if n == 0 {
			return fmt.Errorf("project %s: %w", id, domain.ErrNotFound)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM project_members WHERE project = ?`, id); err != nil {
			return fmt.Errorf("sqlite: clear project members: %w", err)
		}
		return insertMembers(ctx, tx, id, members)
	})
}

// CreateServer registers a tool server.
func (s *Store) CreateServer(ctx context.Context, sv domain.Server) error {
	return s.announced(ports.RegistryChangeKey(ports.RegistryServer+sv.Name), s.exec(ctx, "register server "+sv.Name, "server "+sv.Name+" already exists",
		`INSERT INTO servers (name, url, endpoint, credential, upstream_auth, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		sv.Name, sv.URL, sv.Endpoint, sv.Credential, domain.EncodeUpstreamAuth(sv.UpstreamAuth), nanos(sv.CreatedAt)))
}

const serverColumns = `name, url, endpoint, credential, upstream_auth, created_at`

func scanServer(row scanner) (domain.Server, error) {
	var (
		sv      domain.Server
		auth    string
		created int64
	)
	if err := row.Scan(&sv.Name, &sv.URL, &sv.Endpoint, &sv.Credential, &auth, &created); err != nil {
		return domain.Server{}, err
	}
	sv.CreatedAt = fromNanos(created)
	var err error
	sv.UpstreamAuth, err = domain.DecodeUpstreamAuth(auth)
	return sv, err
}

// ListServers returns a page of servers newest first.
func (s *Store) ListServers(ctx context.Context, page ports.Page) ([]domain.Server, error) {
	query, args := serversQuery(page)
	rows, err := s.queryRows(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list servers: %w", err)
	}
	defer rows.Close()
	out := []domain.Server{}
	for rows.Next() {
		sv, err := scanServer(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: scan server: %w", err)
		}
		out = append(out, sv)
	}
	return out, rows.Err()
}

// GetServer reads one registered server.
func (s *Store) GetServer(ctx context.Context, name string) (domain.Server, error) {
	sv, err := scanServer(s.queryRow(ctx, `SELECT `+serverColumns+` FROM servers WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Server{}, fmt.Errorf("server %s: %w", name, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Server{}, fmt.Errorf("sqlite: read server: %w", err)
	}
	return sv, nil
}

// CreateTool registers a tool of a registered server.
func (s *Store) CreateTool(ctx context.Context, t domain.Tool) error {
	return s.announced(ports.RegistryChangeKey(ports.RegistryTool+t.Name), s.change(ctx, "register tool "+t.Name, func(ctx context.Context, tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM servers WHERE name = ?`, t.Server).Scan(&n); err != nil {
			return fmt.Errorf("sqlite: read server: %w", err)
		}
		if n == 0 {
			return fmt.Errorf("server %s is not registered: %w", t.Server, domain.ErrNotFound)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO tools (name, server, read_only, second_approver, description, created_at, limit_calls, limit_per, limit_by, definition, digest)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.Name, t.Server, boolInt(t.ReadOnly), boolInt(t.SecondApprover), t.Description, nanos(t.CreatedAt), t.Limit.Calls, int64(t.Limit.Per/time.Second), string(t.Limit.By),
			t.Pin.Definition, t.Pin.Digest)
		if isUnique(err) {
			return fmt.Errorf("tool %s already exists: %w", t.Name, domain.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("sqlite: insert tool: %w", err)
		}
		return nil
	}))
}

const toolColumns = `name, server, read_only, second_approver, description, created_at, limit_calls, limit_per, limit_by,
	definition, digest, changed_definition, changed_digest, changed_at`

func scanTool(row scanner) (domain.Tool, error) {
	var (
		t            domain.Tool
		ro, second   int
		created, per int64
		by           string
	)
	var def, changed string
	var changedAt int64
	if err := row.Scan(&t.Name, &t.Server, &ro, &second, &t.Description, &created, &t.Limit.Calls, &per, &by,
		&def, &t.Pin.Digest, &changed, &t.Pin.ChangedDigest, &changedAt); err != nil {
		return domain.Tool{}, err
	}
	t.Pin.Definition, t.Pin.Changed, t.Pin.ChangedAt = def, changed, fromNanos(changedAt)
	t.ReadOnly, t.SecondApprover, t.CreatedAt = ro != 0, second != 0, fromNanos(created)
	t.Limit.Per, t.Limit.By = time.Duration(per)*time.Second, domain.LimitBy(by)
	return t, nil
}

// GetTool reads one tool by its canonical (lower-case) name, finding rows
// stored before names were canonical too; of two spellings, the one that
// is not read-only, so a readonly session never runs a writing tool.
func (s *Store) GetTool(ctx context.Context, name string) (domain.Tool, error) {
	t, err := scanTool(s.queryRow(ctx, `SELECT `+toolColumns+` FROM tools WHERE lower(name) = lower(?) ORDER BY read_only LIMIT 1`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Tool{}, fmt.Errorf("tool %s: %w", name, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Tool{}, fmt.Errorf("sqlite: read tool: %w", err)
	}
	return t, nil
}

// Whether a call waits for approval: of the tool named (any spelling), or
// of a tool registered on the server named.
const (
	toolPending   = `SELECT EXISTS (SELECT 1 FROM tool_calls WHERE status = 'pending' AND lower(tool) = lower(?))`
	serverPending = `SELECT EXISTS (SELECT 1 FROM tool_calls c JOIN tools t ON lower(c.tool) = lower(t.name) WHERE c.status = 'pending' AND t.server = ?)`
)

// catalogChange runs change in one transaction after checking, inside it,
// that what exists (a count query) is there and that nothing waits for
// approval (pending), and announces report.
func (s *Store) catalogChange(ctx context.Context, what, report string, exists, pending, name string, change func(tx *sql.Tx) error) error {
	return s.announced(report, s.change(ctx, what, func(ctx context.Context, tx *sql.Tx) error {
		var n int
		var waits bool
		if err := tx.QueryRowContext(ctx, exists, name).Scan(&n); err != nil {
			return fmt.Errorf("sqlite: %s: %w", what, err)
		}
		if n == 0 {
			return fmt.Errorf("%s is not registered: %w", name, domain.ErrNotFound)
		}
		if err := tx.QueryRowContext(ctx, pending, name).Scan(&waits); err != nil {
			return fmt.Errorf("sqlite: %s: %w", what, err)
		}
		if waits {
			return fmt.Errorf("a call of %s waits for approval; approve or reject it first: %w", name, domain.ErrConflict)
		}
		if err := change(tx); err != nil && !errors.Is(err, domain.ErrConflict) && !errors.Is(err, domain.ErrNotFound) {
			return fmt.Errorf("sqlite: %s: %w", what, err)
		} else if err != nil {
			return err
		}
		return nil
	}))
}

// UpdateServer replaces a server's registration.
func (s *Store) UpdateServer(ctx context.Context, sv domain.Server) error {
	return s.catalogChange(ctx, "change server "+sv.Name, ports.RegistryChangeKey(ports.RegistryServer+sv.Name),
		`SELECT count(*) FROM servers WHERE name = ?`, serverPending, sv.Name, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE servers SET url = ?, endpoint = ?, credential = ?, upstream_auth = ? WHERE name = ?`,
				sv.URL, sv.Endpoint, sv.Credential, domain.EncodeUpstreamAuth(sv.UpstreamAuth), sv.Name)
			return err
		})
}

// DeleteServer removes a server without tools.
func (s *Store) DeleteServer(ctx context.Context, name string) error {
	return s.catalogChange(ctx, "remove server "+name, ports.RegistryChangeKey(ports.RegistryServer+name),
		`SELECT count(*) FROM servers WHERE name = ?`, serverPending, name, func(tx *sql.Tx) error {
			var tools int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM tools WHERE server = ?`, name).Scan(&tools); err != nil {
				return err
			}
			if tools > 0 {
				return fmt.Errorf("server %s has %d tools registered; remove them first: %w", name, tools, domain.ErrConflict)
			}
			var people int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM connections WHERE server = ?`, name).Scan(&people); err != nil {
				return err
			}
			if people > 0 {
				return fmt.Errorf("%d people are connected to server %s; remove their connections first (DELETE /api/v2/connections/{server}, revoked upstream): %w", people, name, domain.ErrConflict)
			}
			_, err := tx.ExecContext(ctx, `DELETE FROM servers WHERE name = ?`, name)
			return err
		})
}

// UpdateTool replaces a tool's registration (every spelling of its name).
func (s *Store) UpdateTool(ctx context.Context, t domain.Tool) error {
	return s.catalogChange(ctx, "change tool "+t.Name, ports.RegistryChangeKey(ports.RegistryTool+t.Name),
		`SELECT count(*) FROM tools WHERE lower(name) = lower(?)`, toolPending, t.Name, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM servers WHERE name = ?`, t.Server).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("server %s is not registered: %w", t.Server, domain.ErrNotFound)
			}
			_, err := tx.ExecContext(ctx, `UPDATE tools SET server = ?, read_only = ?, second_approver = ?, description = ?, limit_calls = ?, limit_per = ?, limit_by = ?,
				definition = CASE WHEN server = ? THEN definition ELSE '' END, digest = CASE WHEN server = ? THEN digest ELSE '' END,
				changed_definition = CASE WHEN server = ? THEN changed_definition ELSE '' END, changed_digest = CASE WHEN server = ? THEN changed_digest ELSE '' END
				WHERE lower(name) = lower(?)`,
				t.Server, boolInt(t.ReadOnly), boolInt(t.SecondApprover), t.Description, t.Limit.Calls, int64(t.Limit.Per/time.Second), string(t.Limit.By),
				t.Server, t.Server, t.Server, t.Server, t.Name)
			return err
		})
}

// DeleteTool removes a tool (every spelling of its name).
func (s *Store) DeleteTool(ctx context.Context, name string) error {
	return s.catalogChange(ctx, "remove tool "+name, ports.RegistryChangeKey(ports.RegistryTool+name),
		`SELECT count(*) FROM tools WHERE lower(name) = lower(?)`, toolPending, name, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `DELETE FROM tools WHERE lower(name) = lower(?)`, name)
			return err
		})
}

// ListTools returns a page of tools newest first.
func (s *Store) ListTools(ctx context.Context, page ports.Page) ([]domain.Tool, error) {
	query, args := toolsQuery(page)
	rows, err := s.queryRows(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list tools: %w", err)
	}
	defer rows.Close()
	out := []domain.Tool{}
	for rows.Next() {
		t, err := scanTool(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: scan tool: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// CreatePolicy stores a rule.
func (s *Store) CreatePolicy(ctx context.Context, r domain.PolicyRule) error {
	return s.announced(ports.RegistryChangeKey(ports.RegistryPolicy+r.ID), s.exec(ctx, "create policy "+r.ID, "policy "+r.ID+" already exists",
		`INSERT INTO policies (id, effect, tool, scope, value, created_by, created_at, when_expr, limit_calls, limit_per, limit_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, string(r.Effect), r.Tool, string(r.Scope), r.Value, r.CreatedBy, nanos(r.CreatedAt), r.When, r.Limit.Calls, int64(r.Limit.Per/time.Second), string(r.Limit.By)))
}

// ListPolicies returns a page of rules newest first.
func (s *Store) ListPolicies(ctx context.Context, page ports.Page) ([]domain.PolicyRule, error) {
	query, args := policiesQuery(page)
	rows, err := s.queryRows(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list policies: %w", err)
	}
	defer rows.Close()
	out := []domain.PolicyRule{}
	for rows.Next() {
		var (
			r             domain.PolicyRule
			effect, scope string
			created, per  int64
			by            string
		)
		if err := rows.Scan(&r.ID, &effect, &r.Tool, &scope, &r.Value, &r.CreatedBy, &created, &r.When, &r.Limit.Calls, &per, &by); err != nil {
			return nil, fmt.Errorf("sqlite: scan policy: %w", err)
		}
		r.Effect, r.Scope, r.CreatedAt = domain.Effect(effect), domain.ScopeKind(scope), fromNanos(created)
		r.Limit.Per, r.Limit.By = time.Duration(per)*time.Second, domain.LimitBy(by)
		out = append(out, r)
	}
	return out, rows.Err()
}

// PolicyVersion reads the counter the policies triggers move.
func (s *Store) PolicyVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.queryRow(ctx, `SELECT version FROM policy_version WHERE id = 1`).Scan(&v); err != nil {
		return 0, fmt.Errorf("sqlite: read policy version: %w", err)
	}
	return v, nil
}

// DeletePolicy removes a rule.
func (s *Store) DeletePolicy(ctx context.Context, id string) error {
	return s.announced(ports.RegistryChangeKey(ports.RegistryPolicy+id), s.execOne(ctx, "delete policy "+id, "policy "+id, `DELETE FROM policies WHERE id = ?`, id))
}

// CreateAgent stores an agent with its limits.
func (s *Store) CreateAgent(ctx context.Context, a domain.Agent) error {
	var tools any // NULL: every tool
	if a.Limits.Tools != nil {
		b, err := json.Marshal(a.Limits.Tools)
		if err != nil {
			return fmt.Errorf("sqlite: encode agent tools: %w", err)
		}
		tools = string(b)
	}
	return s.exec(ctx, domain.AgentCreation(a), "agent "+a.ID+" already exists",
		`INSERT INTO agents (`+agentColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, a.ID, a.Session, a.Parent, a.Depth, tools,
		boolInt(a.Limits.ReadOnly), boolInt(a.Limits.Approval), a.CreatedBy, nanos(a.CreatedAt), a.Name)
}

const agentColumns = `id, session, parent, depth, tools, read_only, approval, created_by, created_at, name`

func scanAgent(row scanner) (domain.Agent, error) {
	var (
		a            domain.Agent
		tools        sql.NullString
		ro, approval int
		created      int64
	)
	if err := row.Scan(&a.ID, &a.Session, &a.Parent, &a.Depth, &tools, &ro, &approval, &a.CreatedBy, &created, &a.Name); err != nil {
		return domain.Agent{}, err
	}
	if tools.Valid {
		a.Limits.Tools = []string{}
		if err := json.Unmarshal([]byte(tools.String), &a.Limits.Tools); err != nil {
			return domain.Agent{}, fmt.Errorf("sqlite: decode agent tools: %w", err)
		}
	}
	a.Limits.ReadOnly, a.Limits.Approval, a.CreatedAt = ro != 0, approval != 0, fromNanos(created)
	return a, nil
}

// GetAgent reads one agent.
func (s *Store) GetAgent(ctx context.Context, id string) (domain.Agent, error) {
	a, err := scanAgent(s.queryRow(ctx, `SELECT `+agentColumns+` FROM agents WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Agent{}, fmt.Errorf("agent %s: %w", id, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Agent{}, fmt.Errorf("sqlite: read agent: %w", err)
	}
	return a, nil
}

// ListAgents returns a page of a session's agents, newest first.
func (s *Store) ListAgents(ctx context.Context, session string, page ports.Page) ([]domain.Agent, error) {
	query, args := agentsQuery(session, page)
	rows, err := s.queryRows(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list agents: %w", err)
	}
	defer rows.Close()
	out := []domain.Agent{}
	for rows.Next() {
		a, err := scanAgent(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: scan agent: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// agentsQuery is the query of ListAgents.
func agentsQuery(session string, page ports.Page) (string, []any) {
	tail, args := keyset([]string{"session = ?"}, []any{session}, page, "id")
	return `SELECT ` + agentColumns + ` FROM agents` + tail, args
}

// CountSubAgents counts the session's agents that have a parent.
func (s *Store) CountSubAgents(ctx context.Context, session string) (int, error) {
	var n int
	if err := s.queryRow(ctx, `SELECT count(*) FROM agents WHERE session = ? AND parent <> ''`, session).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: count sub-agents: %w", err)
	}
	return n, nil
}

// CreateToolCall stores a decided tool call.
func (s *Store) CreateToolCall(ctx context.Context, c domain.ToolCall) error {
	return s.exec(ctx, domain.ToolCallChange(c), "tool call "+c.ID+" already exists",
		`INSERT INTO tool_calls (id, session, agent, tool, effect, reason, rule, message, status, requested_by, created_at, resolved_by, resolved_at,
		args_hash, used_at, arguments, waiter, wait_until, tool_digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, c.ID, c.Session, c.Agent, c.Tool,
		string(c.Decision.Effect), c.Decision.Reason, c.Decision.Rule, c.Decision.Message, string(c.Status), c.RequestedBy, nanos(c.CreatedAt), c.ResolvedBy,
		nanos(c.ResolvedAt), c.ArgsHash, nanos(c.UsedAt), string(c.Arguments), c.Waiter, nanos(c.WaitUntil), c.ToolDigest)
}

const toolCallColumns = `id, session, agent, tool, effect, reason, rule, message, status, requested_by, created_at, resolved_by, resolved_at,
	args_hash, used_at, arguments, waiter, wait_until, tool_digest`

func scanToolCall(row scanner) (domain.ToolCall, error) {
	var (
		c                       domain.ToolCall
		effect, status, args    string
		created, resolved, used int64
		until                   int64
	)
	if err := row.Scan(&c.ID, &c.Session, &c.Agent, &c.Tool, &effect, &c.Decision.Reason, &c.Decision.Rule, &c.Decision.Message,
		&status, &c.RequestedBy, &created, &c.ResolvedBy, &resolved, &c.ArgsHash, &used, &args, &c.Waiter, &until, &c.ToolDigest); err != nil {
		return domain.ToolCall{}, err
	}
	if args != "" {
		c.Arguments = []byte(args)
	}
	c.Decision.Effect, c.Status = domain.Effect(effect), domain.ToolCallStatus(status)
	c.CreatedAt, c.ResolvedAt, c.UsedAt, c.WaitUntil = fromNanos(created), fromNanos(resolved), fromNanos(used), fromNanos(until)
	return c, nil
}

// GetToolCall reads one tool call.
func (s *Store) GetToolCall(ctx context.Context, id string) (domain.ToolCall, error) {
	c, err := scanToolCall(s.queryRow(ctx, `SELECT `+toolCallColumns+` FROM tool_calls WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return domain.ToolCall{}, fmt.Errorf("tool call %s: %w", id, domain.ErrNotFound)
	}
	if err != nil {
		return domain.ToolCall{}, fmt.Errorf("sqlite: read tool call: %w", err)
	}
	return c, nil
}

// ListToolCalls returns matching calls, newest first.
func (s *Store) ListToolCalls(ctx context.Context, f ports.ToolCallFilter) ([]domain.ToolCall, error) {
	query, args := toolCallsQuery(f)
	rows, err := s.queryRows(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list tool calls: %w", err)
	}
	defer rows.Close()
	out := []domain.ToolCall{}
	for rows.Next() {
		c, err := scanToolCall(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: scan tool call: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// toolCallsQuery is the query of ListToolCalls.
func toolCallsQuery(f ports.ToolCallFilter) (string, []any) {
	var (
		where []string
		args  []any
	)
	if f.Session != "" {
		where, args = append(where, "session = ?"), append(args, f.Session)
	}
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, string(f.Status))
	}
	tail, args := keyset(where, args, f.Page, "id")
	return `SELECT ` + toolCallColumns + ` FROM tool_calls` + tail, args
}

// WithdrawWaiting withdraws the pending call waiter waits for; the WHERE
// clause makes it a compare-and-set against an approval.
func (s *Store) WithdrawWaiting(ctx context.Context, waiter, by string, at time.Time) (domain.ToolCall, error) {
	var c domain.ToolCall
	err := s.change(ctx, "withdraw the tool call nobody waits for", func(ctx context.Context, tx *sql.Tx) error {
		var id string
		err := tx.QueryRowContext(ctx, `SELECT id FROM tool_calls WHERE waiter = ? AND waiter <> '' AND status = ? LIMIT 1`,
			waiter, string(domain.CallPending)).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("no pending tool call waited for: %w", domain.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("sqlite: find a waited tool call: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tool_calls SET status = ?, resolved_by = ?, resolved_at = ? WHERE id = ? AND status = ?`,
			string(domain.CallWithdrawn), by, nanos(at), id, string(domain.CallPending)); err != nil {
			return fmt.Errorf("sqlite: withdraw tool call: %w", err)
		}
		c, err = scanToolCall(tx.QueryRowContext(ctx, `SELECT `+toolCallColumns+` FROM tool_calls WHERE id = ?`, id))
		if err != nil {
			return fmt.Errorf("sqlite: read tool call: %w", err)
		}
		return nil
	})
	return c, err
}

// ResolveToolCall approves or rejects a pending call; the WHERE clause
// makes it a compare-and-set, so only one resolution wins.
func (s *Store) ResolveToolCall(ctx context.Context, id string, status domain.ToolCallStatus, by string, at time.Time) (domain.ToolCall, error) {
	var c domain.ToolCall
	err := s.change(ctx, "mark tool call "+id+" "+string(status), func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tool_calls SET status = ?, resolved_by = ?, resolved_at = ? WHERE id = ? AND status = ?`,
			string(status), by, nanos(at), id, string(domain.CallPending))
		if err != nil {
			return fmt.Errorf("sqlite: resolve tool call: %w", err)
		}
		n, _ := res.RowsAffected()
		c, err = scanToolCall(tx.QueryRowContext(ctx, `SELECT `+toolCallColumns+` FROM tool_calls WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("tool call %s: %w", id, domain.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("sqlite: read tool call: %w", err)
		}
		if n == 0 {
			return fmt.Errorf("tool call %s is %s, not pending: %w", id, c.Status, domain.ErrConflict)
		}
		return nil
	})
	if err != nil {
		return domain.ToolCall{}, err
	}
	return c, nil
}

// UseApproval marks an approved, unused call used; the WHERE clause makes
// it a compare-and-set, so one approval releases one call.
func (s *Store) UseApproval(ctx context.Context, id string, at time.Time) error {
	return s.change(ctx, "use the approval of tool call "+id, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tool_calls SET used_at = ? WHERE id = ? AND status = ? AND used_at = 0`,
			nanos(at), id, string(domain.CallApproved))
		if err != nil {
			return fmt.Errorf("sqlite: use approval: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return nil
		}
		c, err := scanToolCall(tx.QueryRowContext(ctx, `SELECT `+toolCallColumns+` FROM tool_calls WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("tool call %s: %w", id, domain.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("sqlite: read tool call: %w", err)
		}
		return fmt.Errorf("tool call %s is %s (used: %t), not an unused approval: %w", id, c.Status, !c.UsedAt.IsZero(), domain.ErrConflict)
	})
}

// SetSessionMode changes a session's mode.
func (s *Store) SetSessionMode(ctx context.Context, id string, mode domain.SessionMode) error {
	return s.announced(ports.SessionChangeKey(id), s.execOne(ctx, "set the mode of session "+id+" to "+string(mode), "session "+id, `UPDATE sessions SET mode = ? WHERE id = ?`, string(mode), id))
}

// serversQuery is the query of ListServers.
func serversQuery(page ports.Page) (string, []any) {
	tail, args := keyset(nil, nil, page, "name")
	return `SELECT ` + serverColumns + ` FROM servers` + tail, args
}

// toolsQuery is the query of ListTools.
func toolsQuery(page ports.Page) (string, []any) {
	tail, args := keyset(nil, nil, page, "name")
	return `SELECT ` + toolColumns + ` FROM tools` + tail, args
}

// policiesQuery is the query of ListPolicies.
func policiesQuery(page ports.Page) (string, []any) {
	tail, args := keyset(nil, nil, page, "id")
	return `SELECT id, effect, tool, scope, value, created_by, created_at, when_expr, limit_calls, limit_per, limit_by FROM policies` + tail, args
}
