package rest

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
)

func (s *Server) sessionRoutes() []route {
	return []route{
		{fiber.MethodGet, "/api/v2/sessions", domain.PermSessionsRead, s.listSessions},
		{fiber.MethodPost, "/api/v2/sessions", domain.PermSessionsWrite, s.createSession},
		{fiber.MethodGet, "/api/v2/sessions/:id", domain.PermSessionsRead, s.getSession},
		{fiber.MethodDelete, "/api/v2/sessions/:id", domain.PermSessionsWrite, s.deleteSession},
	}
}

type sessionJSON struct {
	ID        string              `json:"id"`
	Owner     string              `json:"owner"`
	OwnerName string              `json:"owner_name,omitempty"`
	Project   string              `json:"project"`
	Title     string              `json:"title"`
	Mode      domain.SessionMode  `json:"mode"`
	State     domain.SessionState `json:"state"`
	CreatedAt time.Time           `json:"created_at"`
}

func toSessionJSON(s domain.Session) sessionJSON {
	return sessionJSON{ID: s.ID, Owner: s.Owner, Project: s.Project, Title: s.Title, Mode: s.Mode, State: s.State, CreatedAt: s.CreatedAt}
}

func (s *Server) listSessions(c *fiber.Ctx) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	page, err := s.uc.Sessions.List(c.UserContext(), principalOf(c), req)
	if err != nil {
		return err
	}
	return writeNamedPage(s, c, "sessions", page, func(ss domain.Session) ([]string, []string) { return []string{ss.Owner}, nil },
		func(ss domain.Session, n answerNames) sessionJSON {
			j := toSessionJSON(ss)
			j.OwnerName = n.people[ss.Owner]
			return j
		})
}

type createSessionRequest struct {
	Title   string `json:"title"`
	Project string `json:"project"`
	Mode    string `json:"mode"`
}

func (s *Server) createSession(c *fiber.Ctx) error {
	var req createSessionRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	sess, err := s.uc.Sessions.Create(c.UserContext(), principalOf(c), app.NewSession(req))
	if err != nil {
		return err
	}
	c.Location("/api/v2/sessions/" + sess.ID)
	return c.Status(fiber.StatusCreated).JSON(toSessionJSON(sess))
}

func (s *Server) getSession(c *fiber.Ctx) error {
	sess, err := s.uc.Sessions.Get(c.UserContext(), principalOf(c), c.Params("id"))
	if err != nil {
		return err
	}
	n, err := s.namesOf(c, []string{sess.Owner}, nil)
	if err != nil {
		return err
	}
	j := toSessionJSON(sess)
	j.OwnerName = n.people[sess.Owner]
	return c.JSON(j)
}

func (s *Server) deleteSession(c *fiber.Ctx) error {
	if err := s.uc.Sessions.Delete(c.UserContext(), principalOf(c), c.Params("id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}
