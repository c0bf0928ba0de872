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
		in.Error = signInError(c, p)
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
		in.Key, in.DebugKeys = l.uc.KeySignInEnabled(), s.cfg.Debug
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

// signInError says in plain words why a sign-in failed: the API's 401
// messages are terse on purpose (they name no check a guesser could use),
// which a person at the form need not be.
func signInError(c *fiber.Ctx, p problem) string {
	path := strings.TrimRight(strings.ToLower(c.Path()), "/")
	switch {
	case p.status == fiber.StatusTooManyRequests:
		if wait := c.GetRespHeader(fiber.HeaderRetryAfter); wait != "" {
			return "Too many failed attempts. Try again in " + wait + " seconds."
		}
		return "Too many failed attempts. Try again later."
	case p.status == fiber.StatusServiceUnavailable:
		return "The identity provider cannot be reached right now. Try again shortly."
	case p.status == fiber.StatusForbidden:
		return "This form was sent from another site, so it was refused (" + p.detail.Message + ")."
	case p.status != fiber.StatusUnauthorized:
		return p.detail.Message
	case path == "/auth/key":
		return "This key is not valid here. Check it and try again."
	case path == "/auth/login" && c.Method() == fiber.MethodPost:
		return "The username or password is not right, or the account is disabled."
	case path == "/auth/logout":
		return "You were not signed in."
	}
	return "The sign-in did not complete. Start again."
}
