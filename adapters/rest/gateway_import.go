package rest

import (
	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/domain"
)

// gatewayAdminRoutes: an ADMIN imports a server's tools from its own
// tools/list, seeing the diff first (apply false) and then applying it.
func (s *Server) gatewayAdminRoutes() []route {
	if !s.gatewayOn() {
		return nil
	}
	return []route{{fiber.MethodPost, "/api/v2/servers/:name/tools/import", domain.PermServersWrite, s.importTools}}
}

type importRequest struct {
	Apply bool `json:"apply"`
}

type importResponse struct {
	Applied   bool       `json:"applied"`
	Add       []toolJSON `json:"add"`
	Unchanged []string   `json:"unchanged"`
	Unlisted  []string   `json:"registered_not_listed"`
	Elsewhere []string   `json:"registered_on_another_server"`
	Invalid   []string   `json:"invalid_names"`
	// Changed are registered and listed with another definition than
	// pinned (see GET /api/v2/tools/{name}/definition).
	Changed []string `json:"definition_changed"`
}

func (s *Server) importTools(c *fiber.Ctx) error {
	var req importRequest
	if len(c.Body()) > 0 {
		if err := decodeJSON(c, &req); err != nil {
			return err
		}
	}
	d, err := s.uc.MCP.ImportTools(c.UserContext(), principalOf(c), c.Params("name"), req.Apply)
	if err != nil {
		return s.upstreamFailed(err)
	}
	out := importResponse{Applied: req.Apply, Add: make([]toolJSON, len(d.Add)), Unchanged: d.Unchanged, Unlisted: d.Unlisted,
		Elsewhere: d.Elsewhere, Invalid: d.Invalid, Changed: d.Changed}
	for i, t := range d.Add {
		out.Add[i] = toToolJSON(t)
	}
	note(c, d.Note(c.Params("name"), req.Apply))
	return c.JSON(out)
}
