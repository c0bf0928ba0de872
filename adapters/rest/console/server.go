package console

import (
	"errors"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
)

// serverData is a server's set-up page: its registration, where agents
// connect, its tools with an import from the server's own tools/list (the
// diff first), and the rules for its tools.
type serverData struct {
	app.ServerSetUp
	// Gateway is the URL agents connect to ("" when the gateway does not
	// relay this server: no endpoint, or the gateway is off).
	Gateway string
	// CanImport: the gateway is on and the server has an endpoint.
	CanImport bool
	// Diff is what an import would change, when one was asked for.
	Diff *app.ToolsDiff
	// Rules are Rules with whom each applies to, by name.
	Rules []ruleRow
	// Targets suggest who a rule may name: the roles, and the projects
	// the caller sees (value, label).
	Targets [][2]string
}

// serverPath is the set-up page of server name.
func serverPath(name string) string { return "/console/catalog/servers/" + url.PathEscape(name) }

// server shows a server's set-up page.
func (c *Console) server(ctx *fiber.Ctx) error {
	name, err := catalogName(ctx)
	if err != nil {
		return err
	}
	d, err := c.serverData(ctx, name)
	if err != nil {
		return err
	}
	return c.render(ctx, fiber.StatusOK, "server", "Server "+name, d)
}

func (c *Console) serverData(ctx *fiber.Ctx, name string) (serverData, error) {
	s, err := c.uc.Catalog.SetUp(ctx.UserContext(), name)
	if err != nil {
		return serverData{}, err
	}
	d := serverData{ServerSetUp: s, CanImport: c.uc.MCP != nil && s.Server.Endpoint != ""}
	if d.CanImport {
		d.Gateway = c.uc.MCP.ResourceBase() + "/mcp/" + url.PathEscape(s.Server.Name)
	}
	if c.has(ctx, domain.PermPoliciesRead) {
		rules := make([]domain.PolicyRule, len(s.Rules))
		for i, r := range s.Rules {
			rules[i] = r.Rule
		}
		d.Rules = c.ruleRows(ctx, rules)
		for i := range d.Rules {
			d.Rules[i].Tools = s.Rules[i].Tools
		}
	}
	if c.has(ctx, domain.PermPoliciesWrite) {
		if d.Targets, err = c.ruleTargets(ctx); err != nil {
			return serverData{}, err
		}
	}
	return d, nil
}

// importTools asks the server for its tools: without apply it shows what
// an import would change, on the server's page; with apply it registers
// the new ones. Served while the gateway is on (c.uc.MCP).
func (c *Console) importTools(ctx *fiber.Ctx) error {
	name, err := catalogName(ctx)
	if err != nil {
		return err
	}
	apply := ctx.FormValue("apply") == "on"
	diff, err := c.uc.MCP.ImportTools(ctx.UserContext(), c.principal(ctx), name, apply)
	if uf := (*app.MCPUpstreamFailed)(nil); errors.As(err, &uf) {
		return fiber.NewError(fiber.StatusBadGateway, uf.Message)
	} else if err != nil {
		return err
	}
	if c.env.Note != nil {
		c.env.Note(ctx, diff.Note(name, apply))
	}
	if apply {
		names := make([]string, len(diff.Add))
		for i, t := range diff.Add {
			names[i] = t.Name
		}
		outcome := "nothing new to import"
		if len(names) > 0 {
			outcome = "imported " + strings.Join(names, ", ")
		}
		return c.done(ctx, serverPath(name), outcome)
	}
	d, err := c.serverData(ctx, name)
	if err != nil {
		return err
	}
	d.Diff = &diff
	return c.render(ctx, fiber.StatusOK, "server", "Server "+name, d)
}

// ruleRow is a rule as the console shows it: whom it applies to by name
// (a project's name rather than its id, where the caller may read it),
// and on a server's page the server's tools it matches.
type ruleRow struct {
	Rule    domain.PolicyRule
	Applies string
	Tools   []string
}

// ruleRows names whom each rule applies to.
func (c *Console) ruleRows(ctx *fiber.Ctx, rules []domain.PolicyRule) []ruleRow {
	var ids []string
	for _, r := range rules {
		if r.Scope == domain.ScopeProject {
			ids = append(ids, r.Value)
		}
	}
	names := c.projectNames(ctx, ids...)
	rows := make([]ruleRow, len(rules))
	for i, r := range rules {
		rows[i] = ruleRow{Rule: r, Applies: string(r.Scope) + " " + r.Value}
		if n, ok := names[r.Value]; ok && r.Scope == domain.ScopeProject {
			rows[i].Applies = "project " + n
		}
	}
	return rows
}

// projectNames names the projects of ids that the caller may read, id to
// name (at most pageSize look-ups); the others are left out.
func (c *Console) projectNames(ctx *fiber.Ctx, ids ...string) map[string]string {
	names := map[string]string{}
	for _, id := range ids {
		if _, done := names[id]; done || id == "" || len(names) >= pageSize {
			continue
		}
		if p, err := c.uc.Projects.Get(ctx.UserContext(), c.principal(ctx), id); err == nil {
			names[id] = p.Name
		}
	}
	return names
}

// ruleTargets are who a new rule may name: every role, and the projects
// the caller sees (the newest app.MaxPageSize), as (value, label).
func (c *Console) ruleTargets(ctx *fiber.Ctx) ([][2]string, error) {
	var out [][2]string
	for _, r := range c.uc.Authorizer.Roles() {
		out = append(out, [2]string{string(r), "role " + string(r)})
	}
	page, err := c.uc.Projects.List(ctx.UserContext(), c.principal(ctx), app.PageRequest{Limit: app.MaxPageSize})
	if err != nil {
		return nil, err
	}
	for _, p := range page.Items {
		out = append(out, [2]string{p.ID, "project " + p.Name})
	}
	return out, nil
}
