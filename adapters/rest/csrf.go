package rest

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/domain"
)

// sameOriginCookieRequest refuses an unsafe request carrying the session
// cookie that a browser sent from another site (CSRF), by crossSite with
// the host the request was sent to as the origin.
func sameOriginCookieRequest(c *fiber.Ctx) error {
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return nil
	}
	return crossSite(c, "")
}

// crossSite is the one CSRF rule of the service, for the API, the login
// endpoints and the console's forms alike: Sec-Fetch-Site must be
// same-origin or none, else an Origin header must be origin (empty: name
// the host the request was sent to). Requests without either header are
// not from a modern browser and pass; SameSite=Lax keeps the cookie off
// cross-site POSTs of old ones.
func crossSite(c *fiber.Ctx, origin string) error {
	if site := c.Get("Sec-Fetch-Site"); site != "" {
		if site == "same-origin" || site == "none" {
			return nil
		}
		return fmt.Errorf("cross-site request refused (Sec-Fetch-Site: %s): %w", site, domain.ErrForbidden)
	}
	got := c.Get(fiber.HeaderOrigin)
	if got == "" {
		return nil
	}
	if origin != "" {
		if got != origin {
			return fmt.Errorf("cross-origin request refused (Origin is not %s): %w", origin, domain.ErrForbidden)
		}
		return nil
	}
	u, err := url.Parse(got)
	if err != nil || u.Host == "" || !strings.EqualFold(u.Host, string(c.Request().Host())) {
		return fmt.Errorf("cross-origin request refused (Origin is not this host): %w", domain.ErrForbidden)
	}
	return nil
}
