package console

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
	"github.com/agentauth/agentauth/ports"
)

// Route is one page or form of the console and the permission it needs,
// registered by the edge behind the same stages as the API's routes.
type Route struct {
	Method  string
	Path    string
	Need    domain.Permission
	Handler fiber.Handler
}

// Routes lists every console route.
func (c *Console) Routes() []Route {
	get, post := fiber.MethodGet, fiber.MethodPost
	routes := []Route{
		{get, "/", domain.PermMeRead, c.home},
		{get, "/console", domain.PermMeRead, c.me},
		{get, "/console/", domain.PermMeRead, c.me},

		{get, "/console/sessions", domain.PermSessionsRead, c.sessions},
		{post, "/console/sessions", domain.PermSessionsWrite, c.createSession},
		{get, "/console/sessions/:id", domain.PermSessionsRead, c.session},
		{post, "/console/sessions/:id/close", domain.PermSessionsWrite, c.closeSession},
		{post, "/console/sessions/:id/mode", domain.PermSessionsWrite, c.setMode},
		{post, "/console/sessions/:id/agents", domain.PermAgentsWrite, c.createAgent},
		{post, "/console/sessions/:id/tokens", domain.PermAgentsToken, c.mintToken},
		{post, "/console/sessions/:id/tool-calls/:call/approve", domain.PermToolCallsApprove, c.resolve(true)},
		{post, "/console/sessions/:id/tool-calls/:call/reject", domain.PermToolCallsApprove, c.resolve(false)},
		{get, "/console/approvals", domain.PermToolCallsApprove, c.approvals},
		{get, "/console/gateway", domain.PermSessionsRead, c.gateway},

		{get, "/console/dashboard", domain.PermDashboardRead, c.dashboard},
		{get, "/console/projects", domain.PermProjectsRead, c.projects},
		{post, "/console/projects", domain.PermProjectsCreate, c.createProject},
		{get, "/console/projects/:id", domain.PermProjectsRead, c.project},
		{post, "/console/projects/:id/members", domain.PermProjectsWrite, c.setMembers},

		{get, "/console/settings", domain.PermSettingsRead, c.settings},
		{post, "/console/settings", domain.PermSettingsWrite, c.putSettings},
		{get, "/console/policies", domain.PermPoliciesRead, c.policies},
		{post, "/console/policies", domain.PermPoliciesWrite, c.createPolicy},
		{post, "/console/policies/:id/delete", domain.PermPoliciesWrite, c.deletePolicy},
		{get, "/console/catalog", domain.PermServersRead, c.catalog},
		{post, "/console/catalog/servers", domain.PermServersWrite, c.createServer},
		{post, "/console/catalog/tools", domain.PermToolsWrite, c.createTool},
		{get, "/console/catalog/servers/:name", domain.PermServersRead, c.server},
		{post, "/console/catalog/servers/:name", domain.PermServersWrite, c.changeServer},
		{post, "/console/catalog/servers/:name/delete", domain.PermServersWrite, c.deleteServer},
		{post, "/console/catalog/tools/:name", domain.PermToolsWrite, c.changeTool},
		{post, "/console/catalog/tools/:name/delete", domain.PermToolsWrite, c.deleteTool},
		{get, "/console/catalog/tools/:name/definition", domain.PermToolsRead, c.toolDefinition},
		{post, "/console/catalog/tools/:name/definition/accept", domain.PermToolsWrite, c.acceptToolDefinition},
		{get, "/console/roles", domain.PermSettingsRead, c.roles},

		{get, "/console/audit", domain.PermAuditRead, c.audit},
		{get, "/console/audit/verify", domain.PermAuditRead, c.verify},
		{get, "/console/audit/:seq", domain.PermAuditRead, c.record},
	}
	if c.uc.MCP != nil { // the gateway asks a server for its tools
		routes = append(routes, Route{post, "/console/catalog/servers/:name/import", domain.PermServersWrite, c.importTools})
	}
	if c.uc.Keys != nil {
		routes = append(routes,
			Route{get, "/console/keys", domain.PermKeysRead, c.keys},
			Route{post, "/console/keys", domain.PermKeysWrite, c.createKey},
			Route{post, "/console/keys/:id/revoke", domain.PermKeysWrite, c.revokeKey},
		)
	}
	if c.uc.Connections != nil {
		routes = append(routes,
			Route{get, "/console/connections", domain.PermConnectionsRead, c.connections},
			Route{post, "/console/connections/:name/delete", domain.PermConnectionsWrite, c.disconnect},
		)
	}
	return routes
}

func (c *Console) principal(ctx *fiber.Ctx) domain.Principal { return c.env.Principal(ctx) }

// home sends a signed-in browser from the root to the console.
func (c *Console) home(ctx *fiber.Ctx) error {
	return ctx.Redirect("/console/", fiber.StatusFound)
}

type meData struct {
	Method      domain.AuthMethod
	RoleSource  string
	Permissions []permissionRow
}

type permissionRow struct {
	Name        domain.Permission
	Description string
}

func (c *Console) me(ctx *fiber.Ctx) error {
	p := c.principal(ctx)
	d := meData{Method: p.Method, RoleSource: p.RoleSource}
	for _, perm := range c.uc.Authorizer.PermissionsFor(p) {
		d.Permissions = append(d.Permissions, permissionRow{perm, perm.Describe()})
	}
	return c.render(ctx, fiber.StatusOK, "me", "Who am I", d)
}

// pageSize is the rows of a list page.
const pageSize = 50

func (c *Console) sessions(ctx *fiber.Ctx) error {
	list, err := c.uc.Sessions.List(ctx.UserContext(), c.principal(ctx), app.PageRequest{Limit: pageSize, Cursor: ctx.Query("cursor")})
	if err != nil {
		return err
	}
	var projects []domain.Project
	if c.has(ctx, domain.PermSessionsWrite) {
		// The form offers the newest MaxPageSize projects.
		page, err := c.uc.Projects.List(ctx.UserContext(), c.principal(ctx), app.PageRequest{Limit: app.MaxPageSize})
		if err != nil {
			return err
		}
		projects = page.Items
	}
	var ids, owners []string
	for _, ss := range list.Items {
		ids, owners = append(ids, ss.Project), append(owners, ss.Owner)
	}
	n, err := c.names(ctx, owners, nil)
	if err != nil {
		return err
	}
	return c.renderNamed(ctx, fiber.StatusOK, "sessions", "Sessions", sessionsData{list.Items, list.Next, projects, c.projectNames(ctx, ids...)}, n)
}

type sessionsData struct {
	Sessions []domain.Session
	Next     string
	// Projects are those the form offers; ProjectNames names the
	// sessions' projects the caller may read (by id).
	Projects     []domain.Project
	ProjectNames map[string]string
}

func (c *Console) createSession(ctx *fiber.Ctx) error {
	s, err := c.uc.Sessions.Create(ctx.UserContext(), c.principal(ctx), app.NewSession{
		Title: ctx.FormValue("title"), Project: ctx.FormValue("project"), Mode: ctx.FormValue("mode")})
	if err != nil {
		return err
	}
	return c.done(ctx, "/console/sessions/"+s.ID, "session created")
}

type sessionData struct {
	Session domain.Session
	// ProjectName is the session's project's name, when the caller may
	// read it.
	ProjectName string
	// Agents and ToolCalls are one page each, paged by ?agents= and
	// ?cursor= (the cursors of the API's lists).
	Agents    app.Page[domain.Agent]
	ToolCalls app.Page[domain.ToolCall]
	Tools     []domain.Tool
	Servers   []domain.Server
	// Minted is a token just minted: shown once, never stored.
	Minted *app.Minted
}

func (c *Console) loadSession(ctx *fiber.Ctx) (sessionData, error) {
	p, id := c.principal(ctx), ctx.Params("id")
	var d sessionData
	var err error
	if d.Session, err = c.uc.Sessions.Get(ctx.UserContext(), p, id); err != nil {
		return d, err
	}
	d.ProjectName = c.projectNames(ctx, d.Session.Project)[d.Session.Project]
	if d.Agents, err = c.uc.Agents.List(ctx.UserContext(), p, id, app.PageRequest{Limit: pageSize, Cursor: ctx.Query("agents")}); err != nil {
		return d, err
	}
	if d.ToolCalls, err = c.uc.ToolCalls.List(ctx.UserContext(), p, id, app.PageRequest{Limit: pageSize, Cursor: ctx.Query("cursor")}); err != nil {
		return d, err
	}
	if c.has(ctx, domain.PermAgentsToken) {
		// The token form offers the newest MaxPageSize tools and servers.
		tools, err := c.uc.Catalog.ListTools(ctx.UserContext(), p, app.PageRequest{Limit: app.MaxPageSize})
		if err != nil {
			return d, err
		}
		d.Tools = tools.Items
		if c.has(ctx, domain.PermServersRead) {
			servers, err := c.uc.Catalog.ListServers(ctx.UserContext(), app.PageRequest{Limit: app.MaxPageSize})
			if err != nil {
				return d, err
			}
			d.Servers = servers.Items
		}
	}
	return d, nil
}

func (c *Console) session(ctx *fiber.Ctx) error {
	d, err := c.loadSession(ctx)
	if err != nil {
		return err
	}
	return c.renderSession(ctx, fiber.StatusOK, d)
}

// renderSession writes a session's page with the names of the people and
// agents it shows.
func (c *Console) renderSession(ctx *fiber.Ctx, status int, d sessionData) error {
	people, agents := []string{d.Session.Owner}, []string{}
	for _, a := range d.Agents.Items {
		people, agents = append(people, a.CreatedBy), append(agents, a.Parent)
	}
	for _, tc := range d.ToolCalls.Items {
		people, agents = append(people, tc.RequestedBy, tc.ResolvedBy), append(agents, tc.Agent)
	}
	n, err := c.names(ctx, people, agents)
	if err != nil {
		return err
	}
	return c.renderNamed(ctx, status, "session", "Session "+d.Session.Title, d, n)
}

func (c *Console) closeSession(ctx *fiber.Ctx) error {
	if err := c.uc.Sessions.Delete(ctx.UserContext(), c.principal(ctx), ctx.Params("id")); err != nil {
		return err
	}
	return c.done(ctx, "/console/sessions", "session closed")
}

func (c *Console) setMode(ctx *fiber.Ctx) error {
	s, err := c.uc.Sessions.SetMode(ctx.UserContext(), c.principal(ctx), ctx.Params("id"), ctx.FormValue("mode"))
	if err != nil {
		return err
	}
	return c.done(ctx, "/console/sessions/"+s.ID, "mode set to "+string(s.Mode))
}

// list splits a comma- or space-separated field; an empty field is nil
// ("all that the parent has", as in the API).
func list(v string) []string {
	f := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
	if len(f) == 0 {
		return nil
	}
	return f
}

func (c *Console) createAgent(ctx *fiber.Ctx) error {
	a, err := c.uc.Agents.Create(ctx.UserContext(), c.principal(ctx), ctx.Params("id"), app.NewAgent{
		Parent: ctx.FormValue("parent"), Tools: list(ctx.FormValue("tools")), Mode: ctx.FormValue("mode"), Name: ctx.FormValue("name")})
	if err != nil {
		return err
	}
	return c.done(ctx, "/console/sessions/"+ctx.Params("id"), "agent "+a.ID+" created")
}

// mintToken mints an agent token and shows it in the answer to the post
// itself, once: it is never stored nor put in a URL, so a reload cannot
// show it again.
func (c *Console) mintToken(ctx *fiber.Ctx) error {
	m, err := c.uc.AgentTokens.Mint(ctx.UserContext(), c.principal(ctx), ctx.Params("id"), ctx.FormValue("agent"), app.MintRequest{
		Audience: ctx.FormValue("audience"), Tools: list(ctx.FormValue("tools")), TTL: ctx.FormValue("ttl")})
	if err != nil {
		return err
	}
	d, err := c.loadSession(ctx)
	if err != nil {
		return err
	}
	d.Minted = &m
	return c.renderSession(ctx, fiber.StatusCreated, d)
}

func (c *Console) resolve(approve bool) fiber.Handler {
	return func(ctx *fiber.Ctx) error {
		tc, err := c.uc.ToolCalls.Resolve(ctx.UserContext(), c.principal(ctx), ctx.Params("id"), ctx.Params("call"), approve)
		if err != nil {
			return err
		}
		back := "/console/sessions/" + tc.Session
		if ctx.FormValue("back") == "approvals" {
			back = "/console/approvals"
		}
		return c.done(ctx, back, "tool call "+tc.ID+" "+string(tc.Status))
	}
}

type dashboardData struct {
	app.DashboardView
	// ProjectNames names Projects (an id where the caller may not read one).
	ProjectNames []string
	States       []stateCount
	Owners       []stateCount
}

type stateCount struct {
	Name  string
	Count int
}

func counts[K ~string](m map[K]int) []stateCount {
	out := make([]stateCount, 0, len(m))
	for k, n := range m {
		out = append(out, stateCount{string(k), n})
	}
	slices.SortFunc(out, func(a, b stateCount) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (c *Console) dashboard(ctx *fiber.Ctx) error {
	v, err := c.uc.Dashboard.Get(ctx.UserContext(), c.principal(ctx))
	if err != nil {
		return err
	}
	names := c.projectNames(ctx, v.Projects...)
	d := dashboardData{DashboardView: v, States: counts(v.ByState), Owners: counts(v.ByOwner)}
	for _, id := range v.Projects {
		d.ProjectNames = append(d.ProjectNames, cmp.Or(names[id], id))
	}
	return c.render(ctx, fiber.StatusOK, "dashboard", "Dashboard", d)
}

func (c *Console) projects(ctx *fiber.Ctx) error {
	list, err := c.uc.Projects.List(ctx.UserContext(), c.principal(ctx), app.PageRequest{Limit: pageSize, Cursor: ctx.Query("cursor")})
	if err != nil {
		return err
	}
	return c.render(ctx, fiber.StatusOK, "projects", "Projects", list)
}

// members reads "alice, bob" and "lead: carol" lines: one subject per
// item, "lead:" before a subject makes it a lead.
func members(v string) []domain.Member {
	var out []domain.Member
	for _, item := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if s, ok := strings.CutPrefix(item, "lead:"); ok {
			out = append(out, domain.Member{Subject: strings.TrimSpace(s), Lead: true})
			continue
		}
		out = append(out, domain.Member{Subject: item})
	}
	return out
}

func (c *Console) createProject(ctx *fiber.Ctx) error {
	p, err := c.uc.Projects.Create(ctx.UserContext(), c.principal(ctx), ctx.FormValue("name"), members(ctx.FormValue("members")))
	if err != nil {
		return err
	}
	return c.done(ctx, "/console/projects/"+p.ID, "project created")
}

func (c *Console) project(ctx *fiber.Ctx) error {
	p, err := c.uc.Projects.Get(ctx.UserContext(), c.principal(ctx), ctx.Params("id"))
	if err != nil {
		return err
	}
	var lines []string
	for _, m := range p.Members {
		if m.Lead {
			lines = append(lines, "lead:"+m.Subject)
		} else {
			lines = append(lines, m.Subject)
		}
	}
	return c.render(ctx, fiber.StatusOK, "project", "Project "+p.Name, struct {
		Project domain.Project
		Members string
	}{p, strings.Join(lines, "\n")})
}

func (c *Console) setMembers(ctx *fiber.Ctx) error {
	p, err := c.uc.Projects.SetMembers(ctx.UserContext(), c.principal(ctx), ctx.Params("id"), members(ctx.FormValue("members")))
	if err != nil {
		return err
	}
	return c.done(ctx, "/console/projects/"+p.ID, "members saved")
}

func (c *Console) settings(ctx *fiber.Ctx) error {
	st, err := c.uc.Settings.Get(ctx.UserContext())
	if err != nil {
		return err
	}
	return c.render(ctx, fiber.StatusOK, "settings", "Settings", st)
}

func (c *Console) putSettings(ctx *fiber.Ctx) error {
	next := domain.Settings{SecurityGateway: ctx.FormValue("security_gateway") == "on",
		DefaultSessionMode: domain.SessionMode(ctx.FormValue("default_session_mode"))}
	if err := c.uc.Settings.Put(ctx.UserContext(), next); err != nil {
		return err
	}
	return c.done(ctx, "/console/settings", "settings saved")
}

type policiesData struct {
	Rules app.Page[domain.PolicyRule]
	// Use is the count of each limit's running window, every instance's.
	Use []domain.QuotaUse
	// Rows are Rules.Items with whom each applies to, by name.
	Rows  []ruleRow
	Roles []domain.Role
	Perms []domain.Permission
	// Can is the simulator's question and answer; nil when none was asked.
	Can *canAnswer
	// Sim is the tool-call simulation asked for; nil when none was.
	Sim *simAnswer
}

// simAnswer is a simulated tool call (GET /console/policies?tool=…): the
// question as asked, which rule decides and why, and what each matching
// rule said.
type simAnswer struct {
	Tool, Args, Roles, Subject, Project, Mode string
	Depth                                     int
	Decision                                  domain.ToolDecision
	Steps                                     []domain.RuleStep
}

// simulate answers the console's simulation form.
func (c *Console) simulate(ctx *fiber.Ctx) (*simAnswer, error) {
	a := &simAnswer{Tool: ctx.Query("tool"), Args: ctx.Query("args", "{}"), Roles: ctx.Query("roles"), Subject: ctx.Query("subject"),
		Project: ctx.Query("project"), Mode: ctx.Query("mode", "auto"), Depth: ctx.QueryInt("depth", 0)}
	args, err := mcpwire.CanonicalArguments(json.RawMessage(a.Args))
	if err != nil {
		return nil, fmt.Errorf("arguments: %v: %w", err, domain.ErrInvalidInput)
	}
	var roles []domain.Role
	for _, r := range strings.FieldsFunc(a.Roles, func(r rune) bool { return r == ',' || r == ' ' }) {
		roles = append(roles, domain.Role(strings.ToUpper(r)))
	}
	a.Decision, a.Steps, err = c.uc.Policies.Simulate(ctx.UserContext(), c.uc.Authorizer, app.Simulation{Subject: a.Subject, Roles: roles,
		Project: a.Project, Mode: domain.SessionMode(a.Mode), Depth: a.Depth, Tool: a.Tool, Arguments: args})
	return a, err
}

type canAnswer struct {
	Role, Action, Resource string
	Allowed                bool
	Answer                 string
}

// policies lists the rules and answers "may role R do action A on
// resource S" as `agentauth policy can` does.
func (c *Console) policies(ctx *fiber.Ctx) error {
	rules, err := c.uc.Policies.List(ctx.UserContext(), app.PageRequest{Limit: pageSize, Cursor: ctx.Query("cursor")})
	if err != nil {
		return err
	}
	d := policiesData{Rules: rules, Rows: c.ruleRows(ctx, rules.Items), Roles: c.uc.Authorizer.Roles(), Perms: domain.AllPermissions()}
	if d.Use, err = c.uc.Quotas.Use(ctx.UserContext()); err != nil {
		return err
	}
	if ctx.Query("tool") != "" {
		if d.Sim, err = c.simulate(ctx); err != nil {
			return err
		}
	}
	if role := ctx.Query("role"); role != "" {
		a := canAnswer{Role: role, Action: ctx.Query("action"), Resource: ctx.Query("resource")}
		r := domain.Role(strings.ToUpper(strings.TrimSpace(role)))
		if !c.uc.Authorizer.Knows(r) {
			return fmt.Errorf("unknown role %q; known roles: %s: %w", role, domain.JoinRoles(c.uc.Authorizer.Roles()), domain.ErrInvalidInput)
		}
		text, err := domain.PermissionOf(a.Action, a.Resource, "Action", "Resource")
		if err != nil {
			return err
		}
		perm, err := domain.ParsePermission(text)
		if err != nil {
			return err
		}
		dec := c.uc.Authorizer.Decide([]domain.Role{r}, perm)
		a.Allowed = dec.Allowed
		if dec.Allowed {
			a.Answer = "allow: " + dec.Reason() + " (" + perm.Describe() + ")"
		} else {
			a.Answer = "deny: " + dec.Reason()
		}
		d.Can = &a
	}
	return c.render(ctx, fiber.StatusOK, "policies", "Policies", d)
}

// formLimit reads a limit's fields (limit_calls, limit_per, limit_by); no
// calls is no limit.
func formLimit(ctx *fiber.Ctx) (domain.Limit, error) {
	calls := strings.TrimSpace(ctx.FormValue("limit_calls"))
	if calls == "" {
		return domain.Limit{}, nil
	}
	n, err := strconv.Atoi(calls)
	if err != nil {
		return domain.Limit{}, fmt.Errorf("limit calls %q: want a number: %w", calls, domain.ErrInvalidInput)
	}
	return domain.ParseLimit(n, ctx.FormValue("limit_per"), ctx.FormValue("limit_by"))
}

func (c *Console) createPolicy(ctx *fiber.Ctx) error {
	limit, err := formLimit(ctx)
	if err != nil {
		return err
	}
	r, err := c.uc.Policies.Create(ctx.UserContext(), c.principal(ctx), domain.PolicyRule{
		Effect: domain.Effect(ctx.FormValue("effect")), Tool: ctx.FormValue("tool"),
		Scope: domain.ScopeKind(ctx.FormValue("scope")), Value: ctx.FormValue("value"), When: ctx.FormValue("when"), Limit: limit})
	if err != nil {
		return err
	}
	added := "rule added: " + string(r.Effect) + " " + r.Tool + " for " + c.ruleRows(ctx, []domain.PolicyRule{r})[0].Applies
	if r.When != "" {
		added += " when " + r.When
	}
	return c.done(ctx, fromServer(ctx, "/console/policies"), added)
}

func (c *Console) deletePolicy(ctx *fiber.Ctx) error {
	if err := c.uc.Policies.Delete(ctx.UserContext(), ctx.Params("id")); err != nil {
		return err
	}
	return c.done(ctx, fromServer(ctx, "/console/policies"), "rule removed")
}

// fromServer is where a form goes back to: the set-up page of the server
// its "server" field names (a form of that page), else path.
func fromServer(ctx *fiber.Ctx, path string) string {
	if s := ctx.FormValue("server"); s != "" {
		return serverPath(s)
	}
	return path
}

func (c *Console) catalog(ctx *fiber.Ctx) error {
	servers, err := c.uc.Catalog.ListServers(ctx.UserContext(), app.PageRequest{Limit: pageSize, Cursor: ctx.Query("servers")})
	if err != nil {
		return err
	}
	var tools app.Page[domain.Tool]
	if c.has(ctx, domain.PermToolsRead) {
		if tools, err = c.uc.Catalog.ListTools(ctx.UserContext(), c.principal(ctx), app.PageRequest{Limit: pageSize, Cursor: ctx.Query("tools")}); err != nil {
			return err
		}
	}
	return c.render(ctx, fiber.StatusOK, "catalog", "Servers & tools", struct {
		Servers app.Page[domain.Server]
		Tools   app.Page[domain.Tool]
	}{servers, tools})
}

// createServer registers a server; a server for the gateway (an
// endpoint) without a URL is named by the gateway's resource for it.
func (c *Console) createServer(ctx *fiber.Ctx) error {
	sv := domain.Server{Name: ctx.FormValue("name"), URL: ctx.FormValue("url"), Endpoint: ctx.FormValue("endpoint"), Credential: ctx.FormValue("credential")}
	if sv.URL == "" && sv.Endpoint != "" && c.uc.MCP != nil {
		sv.URL = c.uc.MCP.ResourceBase() + "/mcp/" + url.PathEscape(sv.Name)
	}
	s, err := c.uc.Catalog.CreateServer(ctx.UserContext(), sv)
	if err != nil {
		return err
	}
	return c.done(ctx, serverPath(s.Name), "server "+s.Name+" registered")
}

func (c *Console) createTool(ctx *fiber.Ctx) error {
	limit, err := formLimit(ctx)
	if err != nil {
		return err
	}
	t, err := c.uc.Catalog.CreateTool(ctx.UserContext(), domain.Tool{Name: ctx.FormValue("name"), Server: ctx.FormValue("server"),
		ReadOnly: ctx.FormValue("read_only") == "on", SecondApprover: ctx.FormValue("second_approver") == "on", Description: ctx.FormValue("description"), Limit: limit})
	if err != nil {
		return err
	}
	return c.done(ctx, "/console/catalog", "tool "+t.Name+" registered")
}

// catalogName is the :name of a server's or tool's form, unescaped (a
// tool's name may hold "/").
func catalogName(ctx *fiber.Ctx) (string, error) {
	name, err := url.PathUnescape(ctx.Params("name"))
	if err != nil {
		return "", fmt.Errorf("name in the path: %v: %w", err, domain.ErrInvalidInput)
	}
	return name, nil
}

// definitionData is a tool's pinned definition beside the changed one,
// each as indented JSON, for an ADMIN to compare.
type definitionData struct {
	Tool            domain.Tool
	Pinned, Changed string
}

func indentJSON(s string) string {
	var b bytes.Buffer
	if s == "" || json.Indent(&b, []byte(s), "", "  ") != nil {
		return s
	}
	return b.String()
}

// toolDefinition shows a tool's pinned and changed definitions side by side.
func (c *Console) toolDefinition(ctx *fiber.Ctx) error {
	name, err := catalogName(ctx)
	if err != nil {
		return err
	}
	t, err := c.uc.Gateway.ToolDefinition(ctx.UserContext(), name)
	if err != nil {
		return err
	}
	return c.render(ctx, fiber.StatusOK, "definition", "Definition of "+t.Name, definitionData{Tool: t, Pinned: indentJSON(t.Pin.Definition), Changed: indentJSON(t.Pin.Changed)})
}

// acceptToolDefinition pins the changed definition the form names by digest.
func (c *Console) acceptToolDefinition(ctx *fiber.Ctx) error {
	name, err := catalogName(ctx)
	if err != nil {
		return err
	}
	a, err := c.uc.Gateway.AcceptDefinition(ctx.UserContext(), name, ctx.FormValue("sha256"))
	if err != nil {
		return err
	}
	if c.env.Note != nil {
		c.env.Note(ctx, a.String())
	}
	return c.done(ctx, "/console/catalog", "tool "+a.Tool.Name+": changed definition accepted, now sha256 "+a.Tool.Pin.Digest)
}

// changeServer replaces a server's registration with the form's.
func (c *Console) changeServer(ctx *fiber.Ctx) error {
	name, err := catalogName(ctx)
	if err != nil {
		return err
	}
	u, e, cr := ctx.FormValue("url"), ctx.FormValue("endpoint"), ctx.FormValue("credential")
	if _, _, err := c.uc.Catalog.ChangeServer(ctx.UserContext(), name, app.ServerChange{URL: &u, Endpoint: &e, Credential: &cr}); err != nil {
		return err
	}
	return c.done(ctx, fromServer(ctx, "/console/catalog"), "server "+name+" changed")
}

func (c *Console) deleteServer(ctx *fiber.Ctx) error {
	name, err := catalogName(ctx)
	if err != nil {
		return err
	}
	if err := c.uc.Catalog.DeleteServer(ctx.UserContext(), name); err != nil {
		return err
	}
	return c.done(ctx, "/console/catalog", "server "+name+" removed")
}

// changeTool replaces a tool's registration with the form's.
func (c *Console) changeTool(ctx *fiber.Ctx) error {
	name, err := catalogName(ctx)
	if err != nil {
		return err
	}
	server, desc := ctx.FormValue("server"), ctx.FormValue("description")
	ro, second := ctx.FormValue("read_only") == "on", ctx.FormValue("second_approver") == "on"
	_, t, err := c.uc.Catalog.ChangeTool(ctx.UserContext(), name, app.ToolChange{Server: &server, ReadOnly: &ro, SecondApprover: &second, Description: &desc})
	if err != nil {
		return err
	}
	return c.done(ctx, "/console/catalog", "tool "+t.Name+" changed")
}

func (c *Console) deleteTool(ctx *fiber.Ctx) error {
	name, err := catalogName(ctx)
	if err != nil {
		return err
	}
	if err := c.uc.Catalog.DeleteTool(ctx.UserContext(), name); err != nil {
		return err
	}
	return c.done(ctx, "/console/catalog", "tool "+name+" removed")
}

type roleRow struct {
	Name        domain.Role
	Builtin     bool
	Permissions []domain.Permission
}

func (c *Console) roles(ctx *fiber.Ctx) error {
	var rows []roleRow
	for _, r := range c.uc.Authorizer.Roles() {
		rows = append(rows, roleRow{r, r.IsBuiltin(), c.uc.Authorizer.Permissions([]domain.Role{r})})
	}
	return c.render(ctx, fiber.StatusOK, "roles", "Roles", rows)
}

type auditData struct {
	Subject, Decision, Since, Until string
	Records                         []domain.AuditRecord
	Next                            string
	CanExport                       bool
}

// formTime reads a time field: RFC 3339, or the browser's datetime-local
// (taken as UTC).
func formTime(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%s %q: want a time such as 2026-01-02T15:04: %w", name, v, domain.ErrInvalidInput)
}

func (c *Console) audit(ctx *fiber.Ctx) error {
	d := auditData{Subject: ctx.Query("subject"), Decision: ctx.Query("decision"), Since: ctx.Query("since"), Until: ctx.Query("until"),
		CanExport: c.has(ctx, domain.PermAuditExport)}
	q := ports.AuditQuery{Subject: d.Subject, Limit: pageSize}
	switch dec := domain.AuditDecision(d.Decision); dec {
	case "", domain.AuditAllow, domain.AuditDeny:
		q.Decision = dec
	default:
		return fmt.Errorf("decision %q: want allow or deny: %w", d.Decision, domain.ErrInvalidInput)
	}
	var err error
	if q.Since, err = formTime("since", d.Since); err != nil {
		return err
	}
	if q.Until, err = formTime("until", d.Until); err != nil {
		return err
	}
	if cur := ctx.Query("cursor"); cur != "" {
		if q.Before, err = strconv.ParseInt(cur, 10, 64); err != nil || q.Before < 0 {
			return fmt.Errorf("cursor %q: want a record number: %w", cur, domain.ErrInvalidInput)
		}
	}
	page, err := c.uc.Audit.Query(ctx.UserContext(), q)
	if err != nil {
		return err
	}
	d.Records = page.Records
	if page.Next > 0 {
		d.Next = strconv.FormatInt(page.Next, 10)
	}
	subjects := make([]string, len(page.Records))
	for i, r := range page.Records {
		subjects[i] = r.Subject
	}
	n, err := c.names(ctx, subjects, nil)
	if err != nil {
		return err
	}
	return c.renderNamed(ctx, fiber.StatusOK, "audit", "Audit log", d, n)
}

func (c *Console) record(ctx *fiber.Ctx) error {
	seq, err := strconv.ParseInt(ctx.Params("seq"), 10, 64)
	if err != nil || seq <= 0 {
		return fmt.Errorf("record %q: want a record number: %w", ctx.Params("seq"), domain.ErrNotFound)
	}
	page, err := c.uc.Audit.Query(ctx.UserContext(), ports.AuditQuery{Before: seq + 1, Limit: 1})
	if err != nil {
		return err
	}
	if len(page.Records) == 0 || page.Records[0].Seq != seq {
		return fmt.Errorf("audit record %d is not in the log (never written, or removed by retention): %w", seq, domain.ErrNotFound)
	}
	n, err := c.names(ctx, []string{page.Records[0].Subject}, nil)
	if err != nil {
		return err
	}
	return c.renderNamed(ctx, fiber.StatusOK, "record", "Audit record "+strconv.FormatInt(seq, 10), page.Records[0], n)
}

type verifyData struct {
	Step        app.VerifyStep
	Checkpoints []domain.AuditCheckpoint
	NextCP      int64
	From        string
}

// verify runs one verification step (from the latest checkpoint, or from
// ?from=) and lists the signed checkpoints.
func (c *Console) verify(ctx *fiber.Ctx) error {
	req := app.VerifyRequest{Limit: app.MaxVerifyRecords}
	d := verifyData{From: ctx.Query("from")}
	if d.From != "" {
		n, err := strconv.ParseInt(d.From, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("from %q: want a record number: %w", d.From, domain.ErrInvalidInput)
		}
		req.From, req.HasFrom = n, true
	}
	step, err := c.uc.Audit.VerifyStep(ctx.UserContext(), req)
	if err != nil {
		return err
	}
	d.Step = step
	after := int64(0)
	if a := ctx.Query("after"); a != "" {
		if after, err = strconv.ParseInt(a, 10, 64); err != nil || after < 0 {
			return fmt.Errorf("after %q: want a checkpoint number: %w", a, domain.ErrInvalidInput)
		}
	}
	if d.Checkpoints, d.NextCP, err = c.uc.Audit.Checkpoints(ctx.UserContext(), after, pageSize); err != nil {
		return err
	}
	return c.render(ctx, fiber.StatusOK, "verify", "Audit verification", d)
}
