package rest

import (
	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/app"
)

// pageRequest reads ?limit= (0 or absent: app.DefaultPageSize; above
// app.MaxPageSize: clamped to it, as the audit log does) and ?cursor=
// (the next_cursor of the previous answer; one that is not is a 400 when
// the use case parses it).
func pageRequest(c *fiber.Ctx) (app.PageRequest, error) {
	limit, err := queryInt(c, "limit")
	if err != nil {
		return app.PageRequest{}, err
	}
	return app.PageRequest{Limit: limit, Cursor: c.Query("cursor")}, nil
}

// writePage answers one page of a list: its items under name, each turned
// into its JSON form by conv, and next_cursor, null on the last page (the
// audit log's shape).
func writePage[T, J any](c *fiber.Ctx, name string, page app.Page[T], conv func(T) J) error {
	out := make([]J, len(page.Items))
	for i, it := range page.Items {
		out[i] = conv(it)
	}
	var next any
	if page.Next != "" {
		next = page.Next
	}
	return c.JSON(fiber.Map{name: out, "next_cursor": next})
}

// answerNames are the names of the people (by subject) and agents (by id)
// a list answer shows (app.Names): added as *_name fields beside the ids,
// absent where none is known. Labels, never identities.
type answerNames struct{ people, agents map[string]string }

func (s *Server) namesOf(c *fiber.Ctx, people, agents []string) (answerNames, error) {
	var n answerNames
	var err error
	n.people, n.agents, err = s.uc.Names.Lookup(c.UserContext(), people, agents)
	return n, err
}

// writeNamedPage is writePage for items that name people and agents: ids
// lists those an item names, conv turns it into its JSON with their names.
func writeNamedPage[T, J any](s *Server, c *fiber.Ctx, name string, page app.Page[T], ids func(T) (people, agents []string), conv func(T, answerNames) J) error {
	var people, agents []string
	for _, it := range page.Items {
		p, a := ids(it)
		people, agents = append(people, p...), append(agents, a...)
	}
	n, err := s.namesOf(c, people, agents)
	if err != nil {
		return err
	}
	return writePage(c, name, page, func(it T) J { return conv(it, n) })
}
