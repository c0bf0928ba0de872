package console

import (
	"net/url"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
)

// serverRow is a server a person may connect, with their connection to it
// (nil: not connected).
type serverRow struct {
	Name string
	// Issuer is where the person signs in ("" discovered when connecting).
	Issuer string
	Scopes []string
	Conn   *domain.Connection
}

type connectionsData struct {
	Servers []serverRow
	// Everyone is every person's connections, for connections:audit.
	Everyone []domain.Connection
	Next     string
	// Connected names the server a connection was just made to.
	Connected string
}

// connections lists the servers a person may connect, with Connect and
// Disconnect; everyone's connections for ADMIN and AUDITOR. The tokens
// are never on it.
func (c *Console) connections(ctx *fiber.Ctx) error {
	p := c.principal(ctx)
	servers, err := c.uc.Connections.Connectable(ctx.UserContext())
	if err != nil {
		return err
	}
	list, err := c.uc.Connections.List(ctx.UserContext(), p, app.PageRequest{Limit: pageSize, Cursor: ctx.Query("cursor")})
	if err != nil {
		return err
	}
	mine := map[string]*domain.Connection{}
	d := connectionsData{Next: list.Next, Connected: ctx.Query("connected")}
	var people []string
	for i := range list.Items {
		x := &list.Items[i]
		if x.Subject == p.Subject {
			mine[x.Server] = x
		}
		people = append(people, x.Subject)
	}
	if c.has(ctx, domain.PermConnectionsAudit) || c.has(ctx, domain.PermConnectionsManage) {
		d.Everyone = list.Items
	}
	for _, sv := range servers {
		d.Servers = append(d.Servers, serverRow{Name: sv.Name, Issuer: sv.UpstreamAuth.Issuer, Scopes: sv.UpstreamAuth.Scopes, Conn: mine[sv.Name]})
	}
	n, err := c.names(ctx, people, nil)
	if err != nil {
		return err
	}
	return c.renderNamed(ctx, fiber.StatusOK, "connections", "Connections", d, n)
}

// disconnect removes a connection (revoked upstream where offered): one's
// own, or, with subject, another person's (connections:manage).
func (c *Console) disconnect(ctx *fiber.Ctx) error {
	name, err := url.PathUnescape(ctx.Params("name"))
	if err != nil {
		return err
	}
	res, err := c.uc.Connections.Remove(ctx.UserContext(), c.principal(ctx), ctx.FormValue("subject"), name)
	if err != nil {
		return err
	}
	if c.env.Note != nil {
		c.env.Note(ctx, res.String())
	}
	return c.done(ctx, "/console/connections", res.String())
}
