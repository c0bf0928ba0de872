package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// The access model: projects, the tool catalog, policies, agents and tool
// calls, with the same semantics as the SQLite store (see ports/access.go).
var (
	_ ports.ProjectStore     = (*Store)(nil)
	_ ports.CatalogStore     = (*Store)(nil)
	_ ports.PolicyStore      = (*Store)(nil)
	_ ports.AgentStore       = (*Store)(nil)
	_ ports.ToolCallStore    = (*Store)(nil)
	_ ports.SessionModeStore = (*Store)(nil)
)

// conflict turns a unique violation into domain.ErrConflict with a message
// for the client, and wraps anything else as storeErr does.
func conflict(err error, what, op string) error {
	if isUnique(err) {
		return fmt.Errorf("%s: %w", what, domain.ErrConflict)
	}
	return storeErr(op, err)
}

// CreateProject inserts a project with its members.
func (s *Store) CreateProject(ctx context.Context, p domain.Project) error {
	return s.change(ctx, "create project "+p.ID, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO projects (id, name, created_by, created_at) VALUES ($1, $2, $3, $4)`,
			p.ID, p.Name, p.CreatedBy, nanos(p.CreatedAt))
		if err != nil {
			return conflict(err, "project "+p.ID+" already exists", "insert project")
		}
		return insertMembers(ctx, tx, p.ID, p.Members)
	})
}

func insertMembers(ctx context.Context, tx pgx.Tx, project string, members []domain.Member) error {
	for _, m := range members {
		_, err := tx.Exec(ctx, `INSERT INTO project_members (project, subject, lead) VALUES ($1, $2, $3)`, project, m.Subject, m.Lead)
		if err != nil {
			return conflict(err, fmt.Sprintf("member %q is listed twice", m.Subject), "insert project member")
		}
	}
	return nil
}

// GetProject reads one project.
func (s *Store) GetProject(ctx context.Context, id string) (domain.Project, error) {
	list, err := s.queryProjects(ctx, 0, `SELECT id, name, created_by, created_at FROM projects WHERE id = $1`, id)
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
		where, args = append(where, "id IN (SELECT project FROM project_members WHERE subject = $1)"), append(args, f.Member)
	}
	tail, args := keyset(where, args, f.Page, "id")
	return `SELECT id, name, created_by, created_at FROM projects` + tail, args
}

// queryProjects reads the projects of query with their members: all of
// them, or when members > 0 the first members of each by subject.
func (s *Store) queryProjects(ctx context.Context, members int, query string, args ...any) ([]domain.Project, error) {
	rows, _ := s.pool.Query(ctx, query, args...)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Project, error) {
		var (
			p       domain.Project
			created int64
		)
		err := row.Scan(&p.ID, &p.Name, &p.CreatedBy, &created)
		p.CreatedAt = fromNanos(created)
		return p, err
	})
	if err != nil {
		return nil, storeErr("query projects", err)
	}
	if len(out) == 0 {
		return []domain.Project{}, nil
	}
	index := make(map[string]int, len(out))
	ids := make([]string, len(out))
	for i, p := range out {
		index[p.ID], ids[i] = i, p.ID
	}
	mquery, margs := `SELECT project, subject, lead FROM project_members WHERE project = ANY($1) ORDER BY project, subject`, []any{ids}
	if members > 0 {
		mquery, margs = firstMembersQuery(ids, members)
	}
	mrows, _ := s.pool.Query(ctx, mquery, margs...)
	var (
		project string
		m       domain.Member
	)
	_, err = pgx.ForEachRow(mrows, []any{&project, &m.Subject, &m.Lead}, func() error {
		i := index[project]
		out[i].Members = append(out[i].Members, m)
		return nil
	})
	if err != nil {
		return nil, storeErr("query project members", err)
	}
	return out, nil
}

// firstMembersQuery reads the first n members of each project by subject
// (byte-wise, as ListMembers pages them): a range of at most n rows of
// project_members_project_subject per project.
func firstMembersQuery(projects []string, n int) (string, []any) {
	return `SELECT p.id, m.subject, m.lead FROM unnest($1::text[]) AS p (id) CROSS JOIN LATERAL (` +
			`SELECT subject, lead FROM project_members WHERE project = p.id ORDER BY subject COLLATE "C" LIMIT $2) AS m`,
		[]any{projects, n}
}

// ListMembers returns a page of a project's members by subject.
func (s *Store) ListMembers(ctx context.Context, project string, page ports.Page) ([]domain.Member, error) {
	query, args := membersQuery(project, page)
	rows, _ := s.pool.Query(ctx, query, args...)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Member, error) {
		var m domain.Member
		err := row.Scan(&m.Subject, &m.Lead)
		return m, err
	})
	if err != nil {
		return nil, storeErr("list project members", err)
	}
	return out, nil
}

// membersQuery is the query of ListMembers: a range of the index on
// (project, subject COLLATE "C"), subjects compared byte-wise as in SQLite.
func membersQuery(project string, page ports.Page) (string, []any) {
	var limit *int // NULL: no limit
	if page.Limit > 0 {
		limit = &page.Limit
	}
	return `SELECT subject, lead FROM project_members WHERE project = $1 AND subject COLLATE "C" > $2 ORDER BY subject COLLATE "C" LIMIT $3`,
		[]any{project, page.After.Key, limit}
}

// SetMembers replaces the members of a project.
func (s *Store) SetMembers(ctx context.Context, id string, members []domain.Member) error {
	return s.change(ctx, "set the members of project "+id, func(ctx context.Context, tx pgx.Tx) error {
		// Lock the project row: concurrent SetMembers on other instances
		// take turns instead of interleaving their deletes and inserts.
		var found string
		err := tx.QueryRow(ctx, `SELECT id FROM projects WHERE id = $1 FOR UPDATE`, id).Scan(&found)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("project %s: %w", id, domain.ErrNotFound)
		}
		if err != nil {
			return storeErr("read project", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM project_members WHERE project = $1`, id); err != nil {
			return storeErr("clear project members", err)
		}
		return insertMembers(ctx, tx, id, members)
	})
}

// txErr passes on the errors a transaction body already explained (they
// wrap a domain sentinel) and wraps the rest (begin, commit).
func txErr(op string, err error) error {
	for _, sentinel := range []error{domain.ErrConflict, domain.ErrNotFound, domain.ErrUnavailable} {
		if err == nil || errors.Is(err, sentinel) {
			return err
		}
	}
	return storeErr(op, err)
}

// CreateServer registers a tool server.
func (s *Store) CreateServer(ctx context.Context, sv domain.Server) error {
	return s.exec(ctx, "register server "+sv.Name, "server "+sv.Name+" already exists",
		`INSERT INTO servers (name, url, endpoint, credential, upstream_auth, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		sv.Name, sv.URL, sv.Endpoint, sv.Credential, domain.EncodeUpstreamAuth(sv.UpstreamAuth), nanos(sv.CreatedAt))
}

const serverColumns = `name, url, endpoint, credential, upstream_auth, created_at`

func scanServer(row pgx.CollectableRow) (domain.Server, error) {
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
	rows, _ := s.pool.Query(ctx, query, args...)
	out, err := pgx.CollectRows(rows, scanServer)
	if err != nil {
		return nil, storeErr("list servers", err)
	}
	return nonNil(out), nil
}

// GetServer reads one registered server.
func (s *Store) GetServer(ctx context.Context, name string) (domain.Server, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+serverColumns+` FROM servers WHERE name = $1`, name)
	sv, err := pgx.CollectExactlyOneRow(rows, scanServer)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Server{}, fmt.Errorf("server %s: %w", name, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Server{}, storeErr("read server", err)
	}
	return sv, nil
}

// CreateTool registers a tool of a registered server.
func (s *Store) CreateTool(ctx context.Context, t domain.Tool) error {
	return s.change(ctx, "register tool "+t.Name, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO tools (name, server, read_only, second_approver, description, created_at, limit_calls, limit_per, limit_by, definition, digest)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			t.Name, t.Server, t.ReadOnly, t.SecondApprover, t.Description, nanos(t.CreatedAt), t.Limit.Calls, int64(t.Limit.Per/time.Second), string(t.Limit.By),
			t.Pin.Definition, t.Pin.Digest)
		if isForeignKey(err) {
			return fmt.Errorf("server %s is not registered: %w", t.Server, domain.ErrNotFound)
		}
		if err != nil {
			return conflict(err, "tool "+t.Name+" already exists", "insert tool")
		}
		return nil
	})
}

const toolColumns = `name, server, read_only, second_approver, description, created_at, limit_calls, limit_per, limit_by,
	definition, digest, changed_definition, changed_digest, changed_at`

func scanTool(row pgx.CollectableRow) (domain.Tool, error) {
	var (
		t            domain.Tool
		created, per int64
		by           string
	)
	var def, changed string
	var changedAt int64
	err := row.Scan(&t.Name, &t.Server, &t.ReadOnly, &t.SecondApprover, &t.Description, &created, &t.Limit.Calls, &per, &by,
		&def, &t.Pin.Digest, &changed, &t.Pin.ChangedDigest, &changedAt)
	t.Pin.Definition, t.Pin.Changed, t.Pin.ChangedAt = def, changed, fromNanos(changedAt)
	t.CreatedAt = fromNanos(created)
	t.Limit.Per, t.Limit.By = time.Duration(per)*time.Second, domain.LimitBy(by)
	return t, err
}

// GetTool reads one tool by its canonical (lower-case) name, finding rows
// stored before names were canonical too; of two spellings, the one that
// is not read-only, so a readonly session never runs a writing tool.
func (s *Store) GetTool(ctx context.Context, name string) (domain.Tool, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+toolColumns+` FROM tools WHERE lower(name) = lower($1) ORDER BY read_only LIMIT 1`, name)
	t, err := pgx.CollectExactlyOneRow(rows, scanTool)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Tool{}, fmt.Errorf("tool %s: %w", name, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Tool{}, storeErr("read tool", err)
	}
	return t, nil
}

// Whether a call waits for approval: of the tool named (any spelling), or
// of a tool registered on the server named.
const (
	toolPending   = `SELECT EXISTS (SELECT 1 FROM tool_calls WHERE status = 'pending' AND lower(tool) = lower($1))`
	serverPending = `SELECT EXISTS (SELECT 1 FROM tool_calls c JOIN tools t ON lower(c.tool) = lower(t.name) WHERE c.status = 'pending' AND t.server = $1)`
)

// catalogChange runs change in one transaction after locking what it
// changes (lock: a query whose rows are locked FOR UPDATE; none: not
// registered) and checking, inside it, that nothing waits for approval
// (pending). The registry's triggers announce the change.
func (s *Store) catalogChange(ctx context.Context, what, lock, pending, name string, change func(tx pgx.Tx) error) error {
	return s.change(ctx, what, func(ctx context.Context, tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, lock, name)
		n, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return storeErr(what, err)
		}
		if len(n) == 0 {
			return fmt.Errorf("%s is not registered: %w", name, domain.ErrNotFound)
		}
		var waits bool
		if err := tx.QueryRow(ctx, pending, name).Scan(&waits); err != nil {
			return storeErr(what, err)
		}
		if waits {
			return fmt.Errorf("a call of %s waits for approval; approve or reject it first: %w", name, domain.ErrConflict)
		}
		if err := change(tx); err != nil && !errors.Is(err, domain.ErrConflict) && !errors.Is(err, domain.ErrNotFound) {
			return storeErr(what, err)
		} else if err != nil {
			return err
		}
		return nil
	})
}

// UpdateServer replaces a server's registration.
func (s *Store) UpdateServer(ctx context.Context, sv domain.Server) error {
	return s.catalogChange(ctx, "change server "+sv.Name, `SELECT name FROM servers WHERE name = $1 FOR UPDATE`, serverPending, sv.Name, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE servers SET url = $1, endpoint = $2, credential = $3, upstream_auth = $4 WHERE name = $5`,
			sv.URL, sv.Endpoint, sv.Credential, domain.EncodeUpstreamAuth(sv.UpstreamAuth), sv.Name)
		return err
	})
}

// DeleteServer removes a server without tools.
func (s *Store) DeleteServer(ctx context.Context, name string) error {
	return s.catalogChange(ctx, "remove server "+name, `SELECT name FROM servers WHERE name = $1 FOR UPDATE`, serverPending, name, func(tx pgx.Tx) error {
		var tools int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM tools WHERE server = $1`, name).Scan(&tools); err != nil {
			return err
		}
		if tools > 0 {
			return fmt.Errorf("server %s has %d tools registered; remove them first: %w", name, tools, domain.ErrConflict)
		}
		var people int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM connections WHERE server = $1`, name).Scan(&people); err != nil {
			return err
		}
		if people > 0 {
			return fmt.Errorf("%d people are connected to server %s; remove their connections first (DELETE /api/v2/connections/{server}, revoked upstream): %w", people, name, domain.ErrConflict)
		}
		_, err := tx.Exec(ctx, `DELETE FROM servers WHERE name = $1`, name)
		return err
	})
}

// UpdateTool replaces a tool's registration (every spelling of its name).
func (s *Store) UpdateTool(ctx context.Context, t domain.Tool) error {
	return s.catalogChange(ctx, "change tool "+t.Name, `SELECT name FROM tools WHERE lower(name) = lower($1) FOR UPDATE`, toolPending, t.Name, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE tools SET server = $1, read_only = $2, second_approver = $3, description = $4, limit_calls = $5, limit_per = $6, limit_by = $7,
			definition = CASE WHEN server = $1 THEN definition ELSE '' END, digest = CASE WHEN server = $1 THEN digest ELSE '' END,
			changed_definition = CASE WHEN server = $1 THEN changed_definition ELSE '' END, changed_digest = CASE WHEN server = $1 THEN changed_digest ELSE '' END
			WHERE lower(name) = lower($8)`,
			t.Server, t.ReadOnly, t.SecondApprover, t.Description, t.Limit.Calls, int64(t.Limit.Per/time.Second), string(t.Limit.By), t.Name)
		if isForeignKey(err) {
			return fmt.Errorf("server %s is not registered: %w", t.Server, domain.ErrNotFound)
		}
		return err
	})
}

// DeleteTool removes a tool (every spelling of its name).
func (s *Store) DeleteTool(ctx context.Context, name string) error {
	return s.catalogChange(ctx, "remove tool "+name, `SELECT name FROM tools WHERE lower(name) = lower($1) FOR UPDATE`, toolPending, name, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM tools WHERE lower(name) = lower($1)`, name)
		return err
	})
}

// ListTools returns a page of tools newest first.
func (s *Store) ListTools(ctx context.Context, page ports.Page) ([]domain.Tool, error) {
	query, args := toolsQuery(page)
	rows, _ := s.pool.Query(ctx, query, args...)
	out, err := pgx.CollectRows(rows, scanTool)
	if err != nil {
		return nil, storeErr("list tools", err)
	}
	return nonNil(out), nil
}

// CreatePolicy stores a rule.
func (s *Store) CreatePolicy(ctx context.Context, r domain.PolicyRule) error {
	return s.exec(ctx, "create policy "+r.ID, "policy "+r.ID+" already exists",
		`INSERT INTO policies (id, effect, tool, scope, value, created_by, created_at, when_expr, limit_calls, limit_per, limit_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		r.ID, string(r.Effect), r.Tool, string(r.Scope), r.Value, r.CreatedBy, nanos(r.CreatedAt), r.When, r.Limit.Calls, int64(r.Limit.Per/time.Second), string(r.Limit.By))
}

// ListPolicies returns a page of rules newest first.
func (s *Store) ListPolicies(ctx context.Context, page ports.Page) ([]domain.PolicyRule, error) {
	query, args := policiesQuery(page)
	rows, _ := s.pool.Query(ctx, query, args...)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.PolicyRule, error) {
		var (
			r             domain.PolicyRule
			effect, scope string
			created, per  int64
			by            string
		)
		err := row.Scan(&r.ID, &effect, &r.Tool, &scope, &r.Value, &r.CreatedBy, &created, &r.When, &r.Limit.Calls, &per, &by)
		r.Effect, r.Scope, r.CreatedAt = domain.Effect(effect), domain.ScopeKind(scope), fromNanos(created)
		r.Limit.Per, r.Limit.By = time.Duration(per)*time.Second, domain.LimitBy(by)
		return r, err
	})
	if err != nil {
		return nil, storeErr("list policies", err)
	}
	return nonNil(out), nil
}

// PolicyVersion reads the counter the policies trigger moves.
func (s *Store) PolicyVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.pool.QueryRow(ctx, `SELECT version FROM policy_version WHERE id = 1`).Scan(&v); err != nil {
		return 0, storeErr("read policy version", err)
	}
	return v, nil
}

// DeletePolicy removes a rule.
func (s *Store) DeletePolicy(ctx context.Context, id string) error {
	return s.execOne(ctx, "delete policy "+id, "policy "+id, `DELETE FROM policies WHERE id = $1`, id)
}

// CreateAgent stores an agent with its limits.
func (s *Store) CreateAgent(ctx context.Context, a domain.Agent) error {
	var tools *string // NULL: every tool
	if a.Limits.Tools != nil {
		b, err := json.Marshal(a.Limits.Tools)
		if err != nil {
			return fmt.Errorf("postgres: encode agent tools: %w", err)
		}
		str := string(b)
		tools = &str
	}
	return s.exec(ctx, domain.AgentCreation(a), "agent "+a.ID+" already exists",
		`INSERT INTO agents (`+agentColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, a.ID, a.Session, a.Parent, a.Depth, tools,
		a.Limits.ReadOnly, a.Limits.Approval, a.CreatedBy, nanos(a.CreatedAt), a.Name)
}

const agentColumns = `id, session, parent, depth, tools, read_only, approval, created_by, created_at, name`

func scanAgent(row pgx.CollectableRow) (domain.Agent, error) {
	var (
		a       domain.Agent
		tools   *string
		created int64
	)
	if err := row.Scan(&a.ID, &a.Session, &a.Parent, &a.Depth, &tools, &a.Limits.ReadOnly, &a.Limits.Approval, &a.CreatedBy, &created, &a.Name); err != nil {
		return domain.Agent{}, err
	}
	if tools != nil {
		a.Limits.Tools = []string{}
		if err := json.Unmarshal([]byte(*tools), &a.Limits.Tools); err != nil {
			return domain.Agent{}, fmt.Errorf("decode agent tools: %w", err)
		}
	}
	a.CreatedAt = fromNanos(created)
	return a, nil
}

// GetAgent reads one agent.
func (s *Store) GetAgent(ctx context.Context, id string) (domain.Agent, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+agentColumns+` FROM agents WHERE id = $1`, id)
	a, err := pgx.CollectExactlyOneRow(rows, scanAgent)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Agent{}, fmt.Errorf("agent %s: %w", id, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Agent{}, storeErr("read agent", err)
	}
	return a, nil
}

// ListAgents returns a page of a session's agents, newest first.
func (s *Store) ListAgents(ctx context.Context, session string, page ports.Page) ([]domain.Agent, error) {
	query, args := agentsQuery(session, page)
	rows, _ := s.pool.Query(ctx, query, args...)
	out, err := pgx.CollectRows(rows, scanAgent)
	if err != nil {
		return nil, storeErr("list agents", err)
	}
	return nonNil(out), nil
}

// agentsQuery is the query of ListAgents.
func agentsQuery(session string, page ports.Page) (string, []any) {
	tail, args := keyset([]string{"session = $1"}, []any{session}, page, "id")
	return `SELECT ` + agentColumns + ` FROM agents` + tail, args
}

// CountSubAgents counts the session's agents that have a parent.
func (s *Store) CountSubAgents(ctx context.Context, session string) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM agents WHERE session = $1 AND parent <> ''`, session).Scan(&n); err != nil {
		return 0, storeErr("count sub-agents", err)
	}
	return n, nil
}

// CreateToolCall stores a decided tool call.
func (s *Store) CreateToolCall(ctx context.Context, c domain.ToolCall) error {
	return s.exec(ctx, domain.ToolCallChange(c), "tool call "+c.ID+" already exists",
		`INSERT INTO tool_calls (id, session, agent, tool, effect, reason, rule, message, status, requested_by, created_at, resolved_by, resolved_at,
		args_hash, used_at, arguments, waiter, wait_until, tool_digest) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`, c.ID,
		c.Session, c.Agent, c.Tool, string(c.Decision.Effect), c.Decision.Reason, c.Decision.Rule, c.Decision.Message, string(c.Status), c.RequestedBy,
		nanos(c.CreatedAt), c.ResolvedBy, nanos(c.ResolvedAt), c.ArgsHash, nanos(c.UsedAt), string(c.Arguments), c.Waiter, nanos(c.WaitUntil), c.ToolDigest)
}

const toolCallColumns = `id, session, agent, tool, effect, reason, rule, message, status, requested_by, created_at, resolved_by, resolved_at,
	args_hash, used_at, arguments, waiter, wait_until, tool_digest`

func scanToolCall(row pgx.CollectableRow) (domain.ToolCall, error) {
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
	rows, _ := s.pool.Query(ctx, `SELECT `+toolCallColumns+` FROM tool_calls WHERE id = $1`, id)
	c, err := pgx.CollectExactlyOneRow(rows, scanToolCall)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.ToolCall{}, fmt.Errorf("tool call %s: %w", id, domain.ErrNotFound)
	}
	if err != nil {
		return domain.ToolCall{}, storeErr("read tool call", err)
	}
	return c, nil
}

// ListToolCalls returns matching calls, newest first.
func (s *Store) ListToolCalls(ctx context.Context, f ports.ToolCallFilter) ([]domain.ToolCall, error) {
	query, args := toolCallsQuery(f)
	rows, _ := s.pool.Query(ctx, query, args...)
	out, err := pgx.CollectRows(rows, scanToolCall)
	if err != nil {
		return nil, storeErr("list tool calls", err)
	}
	return nonNil(out), nil
}

// toolCallsQuery is the query of ListToolCalls.
func toolCallsQuery(f ports.ToolCallFilter) (string, []any) {
	var (
		where []string
		args  []any
	)
	if f.Session != "" {
		args = append(args, f.Session)
		where = append(where, "session = $"+strconv.Itoa(len(args)))
	}
	if f.Status != "" {
		args = append(args, string(f.Status))
		where = append(where, "status = $"+strconv.Itoa(len(args)))
	}
	tail, args := keyset(where, args, f.Page, "id")
	return `SELECT ` + toolCallColumns + ` FROM tool_calls` + tail, args
}

// ResolveToolCall approves or rejects a pending call. The UPDATE's WHERE
// makes it a compare-and-set: two approvers on two instances cannot both
// WithdrawWaiting withdraws the pending call waiter waits for; the WHERE
// clause makes it a compare-and-set against an approval.
func (s *Store) WithdrawWaiting(ctx context.Context, waiter, by string, at time.Time) (domain.ToolCall, error) {
	var c domain.ToolCall
	err := s.change(ctx, "withdraw the tool call nobody waits for", func(ctx context.Context, tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `UPDATE tool_calls SET status = $1, resolved_by = $2, resolved_at = $3
			WHERE id = (SELECT id FROM tool_calls WHERE waiter = $4 AND waiter <> '' AND status = $5 LIMIT 1) AND status = $5
			RETURNING `+toolCallColumns, string(domain.CallWithdrawn), by, nanos(at), waiter, string(domain.CallPending))
		var err error
		c, err = pgx.CollectExactlyOneRow(rows, scanToolCall)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("no pending tool call waited for: %w", domain.ErrNotFound)
		}
		if err != nil {
			return storeErr("withdraw tool call", err)
		}
		return nil
	})
	return c, err
}

// win, the second waits for the first's row lock and then matches nothing.
func (s *Store) ResolveToolCall(ctx context.Context, id string, status domain.ToolCallStatus, by string, at time.Time) (domain.ToolCall, error) {
	var c domain.ToolCall
	err := s.change(ctx, "mark tool call "+id+" "+string(status), func(ctx context.Context, tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `UPDATE tool_calls SET status = $1, resolved_by = $2, resolved_at = $3 WHERE id = $4 AND status = $5
			RETURNING `+toolCallColumns, string(status), by, nanos(at), id, string(domain.CallPending))
		var err error
		c, err = pgx.CollectExactlyOneRow(rows, scanToolCall)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("pending tool call %s: %w", id, domain.ErrNotFound)
		}
		if err != nil {
			return storeErr("resolve tool call", err)
		}
		return nil
	})
	if !errors.Is(err, domain.ErrNotFound) {
		return c, err
	}
	cur, err := s.GetToolCall(ctx, id)
	if err != nil {
		return domain.ToolCall{}, err
	}
	return domain.ToolCall{}, fmt.Errorf("tool call %s is %s, not pending: %w", id, cur.Status, domain.ErrConflict)
}

// UseApproval marks an approved, unused call used; the UPDATE's WHERE
// makes it a compare-and-set across instances, so one approval releases
// one call.
func (s *Store) UseApproval(ctx context.Context, id string, at time.Time) error {
	err := s.change(ctx, "use the approval of tool call "+id, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE tool_calls SET used_at = $1 WHERE id = $2 AND status = $3 AND used_at = 0`,
			nanos(at), id, string(domain.CallApproved))
		if err != nil {
			return storeErr("use approval", err)
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("unused approval %s: %w", id, domain.ErrNotFound)
		}
		return nil
	})
	if !errors.Is(err, domain.ErrNotFound) {
		return err
	}
	c, err := s.GetToolCall(ctx, id)
	if err != nil {
		return err
	}
	return fmt.Errorf("tool call %s is %s (used: %t), not an unused approval: %w", id, c.Status, !c.UsedAt.IsZero(), domain.ErrConflict)
}

// SetSessionMode changes a session's mode.
func (s *Store) SetSessionMode(ctx context.Context, id string, mode domain.SessionMode) error {
	return s.execOne(ctx, "set the mode of session "+id+" to "+string(mode), "session "+id, `UPDATE sessions SET mode = $1 WHERE id = $2`, string(mode), id)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
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
