package console

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// gatewayScan bounds the audit records one page of gateway calls reads,
// newest first: a page shows the gateway calls among them, and its "older"
// link continues where it stopped, so every call is reachable and no page
// reads the whole log.
const gatewayScan = 2000

type gatewayData struct {
	// All: the caller holds audit:read and sees every caller's calls
	// (Subject filters them); others see their own.
	All     bool
	Subject string
	Calls   []gatewayRow
	Next    string
}

// gatewayRow is one request to the MCP gateway: its audit record and what
// the gateway noted of it (Call.Server and the record's decision and
// reason when it was refused before the gateway read the message).
type gatewayRow struct {
	Record domain.AuditRecord
	Call   domain.GatewayCall
	// Links are Call.Chain's links (the caller, then its agents), each with
	// its name.
	Links []label
}

// gateway lists recent requests to the MCP gateway from the audit log:
// the chain, server, method, tool, decision, reason, upstream status and
// duration. Holders of audit:read see everyone's, others their own.
func (c *Console) gateway(ctx *fiber.Ctx) error {
	p := c.principal(ctx)
	d := gatewayData{All: c.has(ctx, domain.PermAuditRead)}
	q := ports.AuditQuery{Subject: p.Subject, Limit: 500}
	if d.All {
		d.Subject = ctx.Query("subject")
		q.Subject = d.Subject
	}
	if cur := ctx.Query("cursor"); cur != "" {
		var err error
		if q.Before, err = strconv.ParseInt(cur, 10, 64); err != nil || q.Before <= 0 {
			return fmt.Errorf("cursor %q: want a record number: %w", cur, domain.ErrInvalidInput)
		}
	}
	for scanned := 0; scanned < gatewayScan && len(d.Calls) < pageSize; {
		page, err := c.uc.Audit.Query(ctx.UserContext(), q)
		if err != nil {
			return err
		}
		for i, rec := range page.Records {
			if len(d.Calls) == pageSize {
				page.Next = page.Records[i-1].Seq
				break
			}
			if row, ok := c.gatewayRow(rec); ok {
				d.Calls = append(d.Calls, row)
			}
		}
		scanned += len(page.Records)
		if page.Next <= 0 {
			d.Next = ""
			break
		}
		q.Before, d.Next = page.Next, strconv.FormatInt(page.Next, 10)
	}
	n, err := c.chainNames(ctx, d.Calls)
	if err != nil {
		return err
	}
	return c.renderNamed(ctx, fiber.StatusOK, "gateway", "Gateway calls", d, n)
}

// chainSep separates the links of a gateway call's chain (app's chainOf).
const chainSep = " → "

// chainNames names the caller and the agents of each row's chain: the
// caller is the record's subject (its link may add the credential it
// presented), the other links are agent ids.
func (c *Console) chainNames(ctx *fiber.Ctx, rows []gatewayRow) (names, error) {
	var people, agents []string
	for _, r := range rows {
		links := strings.Split(r.Call.Chain, chainSep)
		people, agents = append(people, r.Record.Subject), append(agents, links[1:]...)
	}
	n, err := c.names(ctx, people, agents)
	if err != nil {
		return n, err
	}
	for i := range rows {
		r := &rows[i]
		for j, link := range strings.Split(r.Call.Chain, chainSep) {
			name := n.Agents[link]
			if j == 0 {
				name = n.People[r.Record.Subject]
			}
			r.Links = append(r.Links, label{Name: name, ID: link})
		}
	}
	return n, nil
}

// gatewayRow reads a record of a request to /mcp/{server}.
func (c *Console) gatewayRow(rec domain.AuditRecord) (gatewayRow, bool) {
	path, _, _ := strings.Cut(strings.TrimPrefix(rec.Path, c.env.BasePath), "?")
	server, ok := strings.CutPrefix(path, "/mcp/")
	if !ok {
		return gatewayRow{}, false
	}
	call, ok := domain.ParseGatewayCall(rec.Reason)
	if !ok {
		call = domain.GatewayCall{Method: rec.Method, Server: server, Chain: rec.Subject, Decision: string(rec.Decision), Reason: rec.Reason}
	}
	return gatewayRow{Record: rec, Call: call}, true
}
