package rest

import (
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/adapters/rest/console"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
)

// Browsers get a page, API clients JSON. A request that prefers text/html
// (a browser following a link or posting a form) gets, for a 401 anywhere
// and for any error of the sign-in endpoints, the console's sign-in page as
// the body of that answer, with the same status and headers; a console URL
// answers every error as a page (a 403 names the missing permission). The
// pages carry no script and a Content-Security-Policy of their own.

// wantsPage reports whether the error answer to c should be a page.
func (s *Server) wantsPage(c *fiber.Ctx, status int) bool {
	if console.IsConsolePath(c.Path()) {
		return true
	}
	if c.Accepts(fiber.MIMEApplicationJSON, fiber.MIMETextHTML) != fiber.MIMETextHTML {
		return false
	}
	return status == fiber.StatusUnauthorized || strings.HasPrefix(c.Path(), "/auth/")
}

// writePage answers the error p as a page.
func (s *Server) writePage(c *fiber.Ctx, p problem) error {
	onAuth := strings.HasPrefix(c.Path(), "/auth/")
	if p.status != fiber.StatusUnauthorized && !onAuth {
		return s.console.WriteProblem(c, console.Problem{Status: p.status, Message: p.detail.Message,
			Missing: domain.Permission(p.detail.Missing), RequestID: requestID(c)})
	}
	in := console.SignIn{ReturnTo: returnTo(c), RequestID: requestID(c)}
	switch {
	case onAuth:
		in.Error = p.detail.Message
	case c.Query("signed_out") != "":
		in.Notice = "You are signed out."
	case c.Cookies(SessionCookie) != "":
		in.Error = "Your session has ended; sign in again."
	}
	if l := s.cfg.Login; l != nil {
		if l.uc.ProviderEnabled() {
			in.ProviderURL = s.cfg.BasePath + "/auth/login?return_to=" + url.QueryEscape(in.ReturnTo)
			in.ProviderName = "your identity provider"
			in.Password = l.uc.PasswordLoginEnabled()
		}
		in.Key = l.uc.KeySignInEnabled()
	}
	return s.console.WriteSignIn(c, p.status, in)
}

// returnTo is where a sign-in from this request goes next: the page asked
// for, or the return_to of a sign-in form, or the console.
func returnTo(c *fiber.Ctx) string {
	to := "/console/"
	switch {
	case strings.HasPrefix(c.Path(), "/auth/"):
		if v := c.FormValue("return_to"); v != "" {
			to = v
		} else if v := c.Query("return_to"); v != "" {
			to = v
		}
	case c.Method() == fiber.MethodGet && c.Path() != "/":
		to = c.Path()
		if q := c.Request().URI().QueryString(); len(q) > 0 {
			to += "?" + string(q)
		}
	}
	if !app.SafeReturnTo(to) {
		return "/console/"
	}
	return to
}
