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
	return crossSite(c, webOrigin{})
}

// crossSite is the one CSRF rule of the service, for the API, the login
// endpoints and the console's forms alike: Sec-Fetch-Site must be
// same-origin or none, else the request's Origin (or, without one, its
// Referer) must be want (checkOrigin); the zero want names the host the
// request was sent to. Requests without any of these headers are not from
// a modern browser and pass; SameSite=Lax keeps the cookie off cross-site
// POSTs of old ones.
func crossSite(c *fiber.Ctx, want webOrigin) error {
	if site := c.Get("Sec-Fetch-Site"); site != "" {
		if site == "same-origin" || site == "none" {
			return nil
		}
		return fmt.Errorf("cross-site request refused (Sec-Fetch-Site: %s): %w", site, domain.ErrForbidden)
	}
	if want == (webOrigin{}) {
		want.host = strings.ToLower(string(c.Request().Host()))
	}
	return checkOrigin(want, c.Get(fiber.HeaderOrigin), c.Get(fiber.HeaderReferer))
}

// webOrigin is an origin as the CSRF rule compares it: scheme and host in
// lower case, the scheme's default port left out (as browsers serialise
// Origin). An empty scheme is the origin of a request whose scheme the
// service cannot know (behind a TLS-terminating proxy, outside OIDC mode
// where no redirect URI names it): any scheme on that host and port.
type webOrigin struct{ scheme, host string }

// publicOrigin is the origin of an absolute URL (a redirect URI, a
// Referer); ok is false for anything else.
func publicOrigin(raw string) (o webOrigin, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return webOrigin{}, false
	}
	o = webOrigin{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(u.Host)}
	if p := u.Port(); p != "" && p == defaultPort(o.scheme) {
		o.host = strings.TrimSuffix(o.host, ":"+p)
	}
	return o, true
}

func defaultPort(scheme string) string {
	switch scheme {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

// matches reports whether got, an origin a browser sent, is o.
func (o webOrigin) matches(got webOrigin) bool {
	if o.scheme != "" {
		return o == got
	}
	// The request's Host may name the default port that Origin leaves out.
	return o.host == got.host || got.host+":"+defaultPort(got.scheme) == o.host
}

func (o webOrigin) String() string {
	if o.scheme == "" {
		return "this host"
	}
	return o.scheme + "://" + o.host
}

// checkOrigin is the Origin half of the CSRF rule: a browser names the
// page that sent a request in Origin (a serialised origin: scheme://host,
// no path; "null" from a sandbox, a file or a redirect across origins) or,
// older ones and some same-origin requests, only in Referer. Whichever
// came must be want; neither: not a browser, it passes.
func checkOrigin(want webOrigin, origin, referer string) error {
	switch {
	case origin != "":
		got, ok := publicOrigin(origin)
		// A serialised origin has no user, path, query or fragment.
		_, authority, _ := strings.Cut(origin, "://")
		if !ok || authority == "" || strings.ContainsAny(authority, "@/?#") || !want.matches(got) {
			return fmt.Errorf("cross-origin request refused (Origin is not %s): %w", want, domain.ErrForbidden)
		}
	case referer != "":
		got, ok := publicOrigin(referer)
		if !ok || !want.matches(got) {
			return fmt.Errorf("cross-origin request refused (Referer is not from %s): %w", want, domain.ErrForbidden)
		}
	}
	return nil
}
