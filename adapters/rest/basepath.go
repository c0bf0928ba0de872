package rest

import (
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/domain"
)

// underBasePath serves the routes under s.cfg.BasePath: /agentauth/x is
// routed as /x (so access rules, audit paths and the CSRF check see the
// service's own paths), a Location the service answers with a path of its
// own (/x: after login, a created resource) gets the prefix back, and
// anything outside the prefix is 404.
func (s *Server) underBasePath(c *fiber.Ctx) error {
	p, bp := c.Path(), s.cfg.BasePath
	switch {
	case p == bp:
		c.Path("/")
	case strings.HasPrefix(p, bp+"/"):
		c.Path(p[len(bp):])
	default:
		return fmt.Errorf("not found: this service is served under %s: %w", bp, domain.ErrNotFound)
	}
	err := c.Next()
	if loc := c.Response().Header.Peek(fiber.HeaderLocation); len(loc) > 0 && loc[0] == '/' && (len(loc) == 1 || loc[1] != '/' && loc[1] != '\\') {
		c.Response().Header.Set(fiber.HeaderLocation, bp+string(loc))
	}
	return err
}
