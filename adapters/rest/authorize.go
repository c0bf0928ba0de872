package rest

import (
	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/domain"
)

// require authorizes the route's permission for the caller's roles.
func (s *Server) require(need domain.Permission) fiber.Handler {
	return func(c *fiber.Ctx) error {
		st := stateOf(c)
		if st.agent != nil {
			return s.requireAgent(c, need)
		}
		st.decision = s.uc.Authorizer.Allow(st.principal, need)
		st.decided = true
		if !st.decision.Allowed {
			return &domain.AccessDenied{Decision: st.decision}
		}
		return c.Next()
	}
}
