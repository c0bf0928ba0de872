package rest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Browsers get a page, API clients JSON. When a request prefers text/html
// (a browser following a link), a 401 anywhere and any error of the login
// endpoints answer a small HTML page with the same status: what happened,
// the request id, and a way on (a link to /auth/login in OIDC mode, how to
// send a credential otherwise). The page has no script; its one style block
// is allowed by its hash in the Content-Security-Policy, and html/template
// escapes everything it shows.

const pageStyle = `body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}` +
	`h1{font-size:1.4rem}code{background:#f3f3f3;padding:0 .2rem}.id{color:#666;font-size:.85rem}a.button{display:inline-block;` +
	`padding:.5rem 1rem;background:#1a5fb4;color:#fff;text-decoration:none;border-radius:.3rem}`

// pageCSP allows nothing but the style block above.
var pageCSP = func() string {
	sum := sha256.Sum256([]byte(pageStyle))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}()

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{{.Title}} – agentauth</title><style>` + pageStyle + `</style></head>
<body><h1>{{.Title}}</h1>
<p>{{.Message}}</p>
{{if .LoginURL}}<p><a class="button" href="{{.LoginURL}}">Sign in</a></p>
{{else}}<p>{{.HowTo}}</p>
{{end}}<p class="id">Status {{.Status}} · request id <code>{{.RequestID}}</code> (quote it when you report this)</p>
</body></html>
`))

type page struct {
	Title, Message, HowTo, LoginURL, RequestID string
	Status                                     int
}

// wantsPage reports whether the error answer to c should be a page.
func (s *Server) wantsPage(c *fiber.Ctx, status int) bool {
	if c.Accepts(fiber.MIMEApplicationJSON, fiber.MIMETextHTML) != fiber.MIMETextHTML {
		return false
	}
	return status == fiber.StatusUnauthorized || strings.HasPrefix(c.Path(), "/auth/")
}

// writePage answers the error p as a page.
func (s *Server) writePage(c *fiber.Ctx, p problem) error {
	pg := page{Message: p.detail.Message, RequestID: requestID(c), Status: p.status}
	switch {
	case p.status == fiber.StatusUnauthorized && strings.HasPrefix(c.Path(), "/auth/"):
		pg.Title = "Sign-in did not complete"
	case p.status == fiber.StatusUnauthorized:
		pg.Title = "Sign-in required"
	case p.status == fiber.StatusTooManyRequests:
		pg.Title = "Too many sign-in attempts"
	case p.status == fiber.StatusServiceUnavailable:
		pg.Title = "Sign-in is unavailable right now"
	default:
		pg.Title = "Sign-in did not complete"
	}
	if s.cfg.Login != nil {
		pg.LoginURL = s.cfg.BasePath + "/auth/login"
		if c.Method() == fiber.MethodGet && !strings.HasPrefix(c.Path(), "/auth/") {
			pg.LoginURL += "?return_to=" + url.QueryEscape(c.Path())
		}
	} else {
		pg.HowTo = "This service authenticates API clients: send your key or access token as the header " +
			"Authorization: Bearer <credential>. Ask your administrator for one."
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, pg); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentSecurityPolicy, pageCSP)
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Status(p.status).Send(b.Bytes())
}
