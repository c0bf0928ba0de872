package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/domain"
)

type meResponse struct {
	Subject     string              `json:"subject"`
	Roles       []domain.Role       `json:"roles"`
	Method      domain.AuthMethod   `json:"method"`
	RoleSource  string              `json:"role_source"`
	Permissions []domain.Permission `json:"permissions"`
	// Key is the managed key the caller presented: a hybrid edge asking
	// this instance who a key is narrows the owner's roles by it too.
	Key *meKey `json:"key,omitempty"`
}

type meKey struct {
	ID          string              `json:"id"`
	Permissions []domain.Permission `json:"permissions"`
	Projects    []string            `json:"projects"`
	Tools       []string            `json:"tools"`
}

func (s *Server) me(c *fiber.Ctx) error {
	p := principalOf(c)
	res := meResponse{
		Subject:     p.Subject,
		Roles:       p.Roles,
		Method:      p.Method,
		RoleSource:  p.RoleSource,
		Permissions: s.uc.Authorizer.PermissionsFor(p),
	}
	if p.Key != nil {
		// The key's scope is already within its owner's roles: what the
		// caller may do is what the key holds.
		res.Key = &meKey{ID: p.Key.ID, Permissions: res.Permissions, Projects: p.Key.Projects, Tools: p.Key.Tools}
	}
	return c.JSON(res)
}

// decodeJSON reads a JSON object strictly: unknown fields and trailing data
// are refused with a 400 that says what is wrong.
func decodeJSON(c *fiber.Ctx, v any) error {
	body := c.Body()
	if len(bytes.TrimSpace(body)) == 0 {
		return fmt.Errorf("request body is empty; send a JSON object: %w", domain.ErrInvalidInput)
	}
	if err := noDuplicateKeys(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("request body: %v: %w", err, domain.ErrInvalidInput)
	}
	if dec.More() {
		return fmt.Errorf("request body: more than one JSON value: %w", domain.ErrInvalidInput)
	}
	return nil
}

// noDuplicateKeys refuses a JSON text in which an object names a member
// twice, at any depth. encoding/json keeps the last and matches names
// without regard to case, while a proxy or client in front may read the
// first: the body would mean two things. Names are compared as
// encoding/json matches them (decoded, case-folded). Syntax errors are left
// to the decoder that follows.
func noDuplicateKeys(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	type object struct {
		seen   map[string]bool
		expect bool // the next token is a member name
	}
	var stack []*object
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF, or a syntax error the decoder reports
		}
		var top *object
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.expect {
			if name, ok := tok.(string); ok {
				folded := strings.ToLower(name)
				if top.seen[folded] {
					return fmt.Errorf("request body: duplicate key %q: %w", name, domain.ErrInvalidInput)
				}
				top.seen[folded] = true
				top.expect = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &object{seen: map[string]bool{}, expect: true})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		case json.Delim('['):
			stack = append(stack, nil)
			continue
		}
		// A value ended: in an object, a member name comes next.
		if len(stack) > 0 && stack[len(stack)-1] != nil {
			stack[len(stack)-1].expect = true
		}
	}
}

func queryInt(c *fiber.Ctx, name string) (int, error) {
	raw := c.Query(name)
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("query parameter %s=%q: want a non-negative integer: %w", name, raw, domain.ErrInvalidInput)
	}
	return n, nil
}

func queryTime(c *fiber.Ctx, name string) (time.Time, error) {
	raw := c.Query(name)
	if raw == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return time.Time{}, fmt.Errorf("query parameter %s=%q: want an RFC 3339 time such as 2026-01-02T15:04:05Z: %w", name, raw, domain.ErrInvalidInput)
	}
	return t, nil
}
