package rest

import (
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/domain"
)

// connectionRoutes are people's connections to servers' upstreams: the
// browser's connect flow and the API that lists and removes them; none
// without the use case (the gateway off).
func (s *Server) connectionRoutes() []route {
	if s.uc.Connections == nil {
		return nil
	}
	return []route{
		{fiber.MethodGet, "/connect/:name", domain.PermConnectionsWrite, s.connect},
		{fiber.MethodGet, "/connect/:name/callback", domain.PermConnectionsWrite, s.connectCallback},
		{fiber.MethodGet, "/api/v2/connections", domain.PermConnectionsRead, s.listConnections},
		{fiber.MethodDelete, "/api/v2/connections/:name", domain.PermConnectionsWrite, s.removeConnection},
	}
}

// connect sends the signed-in person's browser to the upstream's
// authorization server (code flow, PKCE, state).
func (s *Server) connect(c *fiber.Ctx) error {
	name, err := pathName(c)
	if err != nil {
		return err
	}
	target, err := s.uc.Connections.Begin(c.UserContext(), principalOf(c), name, c.Query("return_to"))
	if err != nil {
		return err
	}
	note(c, "connecting "+principalOf(c).Subject+" to server "+name)
	return c.Redirect(target, fiber.StatusFound)
}

// connectCallback completes the connection and sends the browser on.
func (s *Server) connectCallback(c *fiber.Ctx) error {
	name, err := pathName(c)
	if err != nil {
		return err
	}
	res, err := s.uc.Connections.Callback(c.UserContext(), principalOf(c), name, c.Query("state"), c.Query("code"), c.Query("error"))
	if err != nil {
		return err
	}
	x := res.Connection
	what := "connected " + x.Subject + " to server " + name + " (upstream subject " + orUnknown(x.UpstreamSubject) +
		", scopes [" + strings.Join(x.Scopes, " ") + "], issuer " + x.Issuer + ")"
	if res.Replaced {
		what += ", replacing the connection before (revoked where offered)"
	}
	note(c, what)
	to := res.ReturnTo
	sep := "?"
	if strings.Contains(to, "?") {
		sep = "&"
	}
	return c.Redirect(to+sep+"connected="+url.QueryEscape(name), fiber.StatusSeeOther)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// connectionJSON is a connection as the API shows it: never its tokens.
type connectionJSON struct {
	ID              string     `json:"id"`
	Subject         string     `json:"subject"`
	SubjectName     string     `json:"subject_name,omitempty"`
	Server          string     `json:"server"`
	UpstreamSubject string     `json:"upstream_subject"`
	Issuer          string     `json:"issuer"`
	Scopes          []string   `json:"scopes"`
	Status          string     `json:"status"`
	Broken          string     `json:"broken,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
	RefreshedAt     *time.Time `json:"refreshed_at"`
	ExpiresAt       *time.Time `json:"expires_at"`
}

func toConnectionJSON(x domain.Connection) connectionJSON {
	j := connectionJSON{ID: x.ID, Subject: x.Subject, Server: x.Server, UpstreamSubject: x.UpstreamSubject, Issuer: x.Issuer,
		Scopes: x.Scopes, Status: string(x.Status), Broken: x.Broken, CreatedAt: x.CreatedAt.UTC()}
	if j.Scopes == nil {
		j.Scopes = []string{}
	}
	if !x.RefreshedAt.IsZero() {
		t := x.RefreshedAt.UTC()
		j.RefreshedAt = &t
	}
	if !x.ExpiresAt.IsZero() {
		t := x.ExpiresAt.UTC()
		j.ExpiresAt = &t
	}
	return j
}

func (s *Server) listConnections(c *fiber.Ctx) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	page, err := s.uc.Connections.List(c.UserContext(), principalOf(c), req)
	if err != nil {
		return err
	}
	return writeNamedPage(s, c, "connections", page, func(x domain.Connection) ([]string, []string) { return []string{x.Subject}, nil },
		func(x domain.Connection, n answerNames) connectionJSON {
			j := toConnectionJSON(x)
			j.SubjectName = n.people[x.Subject]
			return j
		})
}

// removeConnection removes the caller's connection to a server, or, with
// ?subject=, another person's (connections:manage).
func (s *Server) removeConnection(c *fiber.Ctx) error {
	name, err := pathName(c)
	if err != nil {
		return err
	}
	res, err := s.uc.Connections.Remove(c.UserContext(), principalOf(c), c.Query("subject"), name)
	if err != nil {
		return err
	}
	note(c, res.String())
	return c.SendStatus(fiber.StatusNoContent)
}
