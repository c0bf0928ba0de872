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
	st.intent = domain.AuditIntent{RequestID: st.id, Client: st.clientText(), Method: c.Method(), Path: st.target}
	c.SetUserContext(ports.WithAuditIntent(c.UserContext(), &st.intent))
	err := c.Next()
	if err != nil {
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
		Status:     c.Response().StatusCode(),
	}
	rec.Decision, rec.Reason = auditOutcome(auditFacts{
		public: st.public, decided: st.decided, decision: st.decision, err: err, refused: st.refused,
		note: st.note, keyOwnerChange: st.keyOwnerChange, method: c.Method(), path: c.Path(),
	})
	if aerr := s.uc.AuditLog.Record(c.UserContext(), rec); aerr != nil {
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

// auditFacts is what the stages and the handler learned about a request
// that decides its audit outcome.
type auditFacts struct {
	// public: an endpoint that needs no credential (s.public).
	public bool
	// decided: the authorize stage (or an agent's) ran; decision is what
	// it decided.
	decided  bool
	decision domain.Decision
	// err is what the handler chain returned; nil: answered without one.
	err error
	// refused: answered, but what the request asked for was refused (a
	// tool call decided deny, a refused token exchange).
	refused bool
	// note and keyOwnerChange are the handler's additions to the reason.
	note, keyOwnerChange string
	// method and path name the request where no route decided it.
	method, path string
}

// auditOutcome is the audit record's decision and reason for a request.
// A request is allowed only when it was public or its route's permission
// was granted, and nothing later refused it: a resource the caller may
// not touch (ErrForbidden), one hidden from it (ErrNotVisible, answered
// 404) or a refusal the handler marked is a denial.
func auditOutcome(f auditFacts) (domain.AuditDecision, string) {
	decision, reason := domain.AuditDeny, ""
	then := ""
	if f.err != nil {
		then = f.err.Error()
	}
	allowed := f.decided && f.decision.Allowed
	switch {
	case f.public && f.err == nil:
		decision, reason = domain.AuditAllow, "public endpoint"
	case f.public:
		reason = then
	case allowed && errors.Is(f.err, domain.ErrForbidden):
		// The role allowed the route, the resource did not.
		reason = f.decision.Reason() + "; then: " + then
	case allowed && errors.Is(f.err, domain.ErrNotVisible):
		reason = f.decision.Reason() + "; then: " + then + " (exists but is not visible to the caller)"
	case allowed && f.err == nil:
		decision, reason = domain.AuditAllow, f.decision.Reason()
	case allowed:
		// Allowed, then failed for another reason (bad input, a conflict,
		// the store unavailable): access was granted.
		decision, reason = domain.AuditAllow, f.decision.Reason()+"; then: "+then
	case f.err != nil:
		reason = then
	case !f.decided:
		reason = "no route matches " + f.method + " " + f.path
	}
	if f.note != "" {
		reason += "; " + f.note
	}
	if f.keyOwnerChange != "" {
		reason += "; " + f.keyOwnerChange
	}
	if f.refused {
		decision = domain.AuditDeny
	}
	return decision, reason
}
