package rest

import (
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/domain"
)

func (s *Server) settingsRoutes() []route {
	return []route{
		{fiber.MethodGet, "/api/v2/admin/settings", domain.PermSettingsRead, s.getSettings},
		{fiber.MethodPut, "/api/v2/admin/settings", domain.PermSettingsWrite, s.putSettings},
	}
}

type settingsJSON struct {
	SecurityGateway    *bool   `json:"security_gateway"`
	DefaultSessionMode *string `json:"default_session_mode"`
}

func (s *Server) getSettings(c *fiber.Ctx) error {
	st, err := s.uc.Settings.Get(c.UserContext())
	if err != nil {
		return err
	}
	mode := string(st.DefaultSessionMode)
	return c.JSON(settingsJSON{SecurityGateway: &st.SecurityGateway, DefaultSessionMode: &mode})
}

// putSettings replaces the settings; every field is required so that a
// partial body cannot silently reset one.
func (s *Server) putSettings(c *fiber.Ctx) error {
	var req settingsJSON
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.SecurityGateway == nil || req.DefaultSessionMode == nil {
		return fmt.Errorf("settings: security_gateway and default_session_mode are both required: %w", domain.ErrInvalidInput)
	}
	next := domain.Settings{SecurityGateway: *req.SecurityGateway, DefaultSessionMode: domain.SessionMode(*req.DefaultSessionMode)}
	if err := s.uc.Settings.Put(c.UserContext(), next); err != nil {
		return err
	}
	return s.getSettings(c)
}
