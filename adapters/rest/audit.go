package rest

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

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
	Time       time.Time         `json:"time"`
	RequestID  string            `json:"request_id"`
	Subject    string            `json:"subject"`
	Roles      []domain.Role     `json:"roles"`
	AuthMethod domain.AuthMethod `json:"auth_method"`
	Method     string            `json:"method"`
	Path       string            `json:"path"`
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
	return auditJSON{Seq: r.Seq, Time: r.Time, RequestID: r.RequestID, Subject: r.Subject, Roles: roles,
		AuthMethod: r.AuthMethod, Method: r.Method, Path: r.Path, Decision: string(r.Decision), Reason: r.Reason,
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
