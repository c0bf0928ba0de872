package rest

import (
	"errors"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// audit records the access decision of every request that reaches it and
// answers only after the record is committed. If the record cannot be
// committed the response becomes a 503: nothing is answered unaudited.
func (s *Server) audit(c *fiber.Ctx) error {
	st := stateOf(c)
	// The request target as sent (path and query), credentials replaced by
	// their markers: the store seals it (escaped, bounded), so any other
	// bytes are recorded faithfully, and the chain's hash covers it.
	st.intent = domain.AuditIntent{RequestID: st.id, Client: clientOf(c).String(), Method: c.Method(), Path: st.target}
	c.SetUserContext(ports.WithAuditIntent(c.UserContext(), &st.intent))
	err := c.Next()
	reason := ""
	if err != nil {
		reason = err.Error()
		if herr := s.handleError(c, err); herr != nil {
			return herr
		}
	}
	rec := domain.AuditRecord{
		Time:       time.Now(),
		RequestID:  st.id,
		Subject:    st.principal.Subject,
		Roles:      st.principal.Roles,
		AuthMethod: st.principal.Method,
		Method:     c.Method(),
		Path:       st.intent.Path,
		Client:     st.intent.Client,
		IntentKey:  st.intent.Key,
		Decision:   domain.AuditDeny,
		Status:     c.Response().StatusCode(),
	}
	switch {
	case st.public && err == nil:
		rec.Decision, rec.Reason = domain.AuditAllow, "public endpoint"
	case st.public:
		rec.Reason = reason
	case st.decided && st.decision.Allowed && errors.Is(err, domain.ErrForbidden):
		// The role allowed the route, the resource did not: a denial.
		rec.Reason = st.decision.Reason() + "; then: " + reason
	case st.decided && st.decision.Allowed && errors.Is(err, domain.ErrNotVisible):
		// Answered 404 so that its existence does not leak, but refused.
		rec.Reason = st.decision.Reason() + "; then: " + reason + " (exists but is not visible to the caller)"
	case st.decided && st.decision.Allowed && err == nil:
		rec.Decision, rec.Reason = domain.AuditAllow, st.decision.Reason()
	case st.decided && st.decision.Allowed:
		rec.Decision, rec.Reason = domain.AuditAllow, st.decision.Reason()+"; then: "+reason
	case reason != "":
		rec.Reason = reason
	case !st.decided:
		rec.Reason = "no route matches " + c.Method() + " " + c.Path()
	}
	if st.note != "" {
		rec.Reason += "; " + st.note
	}
	if st.keyOwnerChange != "" {
		rec.Reason += "; " + st.keyOwnerChange
	}
	if st.refused {
		rec.Decision = domain.AuditDeny
	}
	if aerr := s.auditLog.Record(c.UserContext(), rec); aerr != nil {
		s.log.Error("audit record not committed; answering 503", zap.String("request_id", st.id), zap.Error(aerr))
		c.Response().ResetBody()
		return fmt.Errorf("audit log: %w", errors.Join(aerr, domain.ErrUnavailable))
	}
	return nil
}

// public marks the request as one to a public, audited endpoint.
func (s *Server) public(c *fiber.Ctx) error {
	stateOf(c).public = true
	return c.Next()
}
