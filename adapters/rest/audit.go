package rest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

func (s *Server) auditRoutes() []route {
	return []route{
		{fiber.MethodGet, "/api/v2/audit", domain.PermAuditRead, s.listAudit},
	}
}

type auditJSON struct {
	Seq        int64             `json:"seq"`
	Version    int               `json:"version"`
	Time       time.Time         `json:"time"`
	RequestID  string            `json:"request_id"`
	Subject    string            `json:"subject"`
	Roles      []domain.Role     `json:"roles"`
	AuthMethod domain.AuthMethod `json:"auth_method"`
	Method     string            `json:"method"`
	Path       string            `json:"path"`
	Client     string            `json:"client"`
	Decision   string            `json:"decision"`
	Reason     string            `json:"reason"`
	Status     int               `json:"status"`
	PrevHash   string            `json:"prev_hash"`
	Hash       string            `json:"hash"`
}

func toAuditJSON(r domain.AuditRecord) auditJSON {
	roles := r.Roles
	if roles == nil {
		roles = []domain.Role{}
	}
	return auditJSON{Seq: r.Seq, Version: r.Version, Time: r.Time, RequestID: r.RequestID, Subject: r.Subject, Roles: roles,
		AuthMethod: r.AuthMethod, Method: r.Method, Path: r.Path, Client: r.Client, Decision: string(r.Decision), Reason: r.Reason,
		Status: r.Status, PrevHash: r.PrevHash, Hash: r.Hash}
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
	page, err := s.audits.Query(c.UserContext(), q)
	if err != nil {
		return err
	}
	out := make([]auditJSON, len(page.Records))
	for i, r := range page.Records {
		out[i] = toAuditJSON(r)
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
		err := s.audits.Export(ctx, int64(after), func(r domain.AuditRecord) error {
			if err := enc.Encode(toAuditJSON(r)); err != nil {
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

type chainBreakJSON struct {
	Kind   domain.BreakKind `json:"kind"`
	Seq    int64            `json:"seq"`
	Last   int64            `json:"last"`
	Reason string           `json:"reason"`
}

func toBreaksJSON(breaks []domain.ChainBreak) []chainBreakJSON {
	out := make([]chainBreakJSON, len(breaks))
	for i, b := range breaks {
		out[i] = chainBreakJSON{Kind: b.Kind, Seq: b.Seq, Last: b.Last, Reason: b.Reason}
	}
	return out
}

// verifyAudit walks the hash chain and reports every break.
func (s *Server) verifyAudit(c *fiber.Ctx) error {
	rep, err := s.audits.Verify(c.UserContext())
	if err != nil {
		return err
	}
	if !rep.OK() {
		note(c, fmt.Sprintf("audit chain: %d break(s), first at seq %d (%s)", rep.BreakCount, rep.Breaks[0].Seq, rep.Breaks[0].Kind))
	}
	return c.JSON(fiber.Map{"ok": rep.OK(), "checked": rep.Checked, "head": rep.HeadHash,
		"breaks": toBreaksJSON(rep.Breaks), "break_count": rep.BreakCount})
}
