package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/strictjson"
)

type meResponse struct {
	Subject string `json:"subject"`
	// Name is how the credential names the caller (a label, never an
	// identity); absent when it names none.
	Name        string              `json:"name,omitempty"`
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
		Name:        p.Name,
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
	// A name twice could mean two things (see strictjson); syntax errors
	// are left to the decoder, whose messages say more.
	if err := strictjson.UniqueNames(body); errors.Is(err, strictjson.ErrDuplicateName) {
		return fmt.Errorf("request body: %v: %w", err, domain.ErrInvalidInput)
	}
	return decodeStrict("request body", body, v)
}

// decodeStrict decodes one JSON value into v, refusing unknown members;
// what names the value in the error.
func decodeStrict(what string, b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %v: %w", what, err, domain.ErrInvalidInput)
	}
	if dec.More() {
		return fmt.Errorf("%s: more than one JSON value: %w", what, domain.ErrInvalidInput)
	}
	return nil
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
