package rest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditjson"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

func (s *Server) auditRoutes() []route {
	return []route{
		{fiber.MethodGet, "/api/v2/audit", domain.PermAuditRead, s.listAudit},
	}
}

func (s *Server) listAudit(c *fiber.Ctx) error {
	q := ports.AuditQuery{Subject: c.Query("subject")}
	switch d := domain.AuditDecision(c.Query("decision")); d {
	case "", domain.AuditAllow, domain.AuditDeny:
		q.Decision = d
	default:
		return fmt.Errorf("query parameter decision=%q: want allow or deny: %w", d, domain.ErrInvalidInput)
	}
	var err error
	if q.Since, err = queryTime(c, "since"); err != nil {
		return err
	}
	if q.Until, err = queryTime(c, "until"); err != nil {
		return err
	}
	if q.Limit, err = queryInt(c, "limit"); err != nil {
		return err
	}
	cursor, err := queryInt(c, "cursor")
	if err != nil {
		return err
	}
	q.Before = int64(cursor)
	page, err := s.uc.Audit.Query(c.UserContext(), q)
	if err != nil {
		return err
	}
	out := make([]auditjson.Record, len(page.Records))
	for i, r := range page.Records {
		out[i] = auditjson.FromRecord(r)
	}
	var next any
	if page.Next > 0 {
		next = strconv.FormatInt(page.Next, 10)
	}
	return c.JSON(fiber.Map{"records": out, "next_cursor": next})
}

// exportAudit streams the audit log as NDJSON, oldest first, one record
// per line, from after=<seq> (default: the beginning). Records are read a
// page at a time, so the log never has to fit in memory.
func (s *Server) exportAudit(c *fiber.Ctx) error {
	after, err := queryInt(c, "after")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	c.Set(fiber.HeaderContentType, "application/x-ndjson")
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		enc := json.NewEncoder(w)
		err := s.uc.Audit.Export(ctx, int64(after), func(r domain.AuditRecord) error {
			if err := enc.Encode(auditjson.FromRecord(r)); err != nil {
				return err
			}
			if w.Buffered() > 32<<10 {
				return w.Flush()
			}
			return nil
		})
		if err != nil {
			// Headers are gone: the truncated stream (no final newline
			// guarantee) and the log are all that can tell.
			s.log.Error("audit export stopped", zap.Error(err))
		}
		_ = w.Flush()
	})
	return nil
}

// verifyAudit checks one bounded step of the chain (see app.VerifyStep):
// by default from the latest signed checkpoint to the head; from=<seq>
// (0: the first record) and limit=<n> walk the whole chain call by call,
// each continuing at the previous answer's next.
func (s *Server) verifyAudit(c *fiber.Ctx) error {
	req := app.VerifyRequest{}
	if c.Query("from") != "" {
		from, err := queryInt(c, "from")
		if err != nil {
			return err
		}
		req.From, req.HasFrom = int64(from), true
	}
	var err error
	if req.Limit, err = queryInt(c, "limit"); err != nil {
		return err
	}
	step, err := s.uc.Audit.VerifyStep(c.UserContext(), req)
	if err != nil {
		return err
	}
	if !step.OK() {
		first := step.Breaks[0]
		note(c, fmt.Sprintf("audit chain: %d break(s), first %s at seq %d", step.BreakCount, first.Kind, first.Seq))
	}
	var next any
	if step.Next > 0 {
		next = strconv.FormatInt(step.Next, 10)
	}
	return c.JSON(fiber.Map{"ok": step.OK(), "from": step.From, "checked": step.Checked, "head_seq": step.HeadSeq, "head": step.HeadHash,
		"anchored": step.Anchored, "breaks": auditjson.Breaks(step.Breaks), "break_count": step.BreakCount,
		"complete": step.Next == 0, "next": next})
}

// listCheckpoints lists the signed checkpoints, oldest first, from
// after=<seq>, a page (limit <= 500) at a time.
func (s *Server) listCheckpoints(c *fiber.Ctx) error {
	after, err := queryInt(c, "after")
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	cps, next, err := s.uc.Audit.Checkpoints(c.UserContext(), int64(after), limit)
	if err != nil {
		return err
	}
	out := make([]auditjson.Checkpoint, len(cps))
	for i, cp := range cps {
		out[i] = auditjson.FromCheckpoint(cp)
	}
	var cursor any
	if next > 0 {
		cursor = strconv.FormatInt(next, 10)
	}
	return c.JSON(fiber.Map{"checkpoints": out, "next_cursor": cursor})
}
