package rest

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// keyRoutes are the managed API keys' endpoints; none without the use case
// (hybrid mode: keys are the centre's).
func (s *Server) keyRoutes() []route {
	if s.uc.Keys == nil {
		return nil
	}
	return []route{
		{fiber.MethodGet, "/api/v2/keys", domain.PermKeysRead, s.listKeys},
		{fiber.MethodPost, "/api/v2/keys", domain.PermKeysWrite, s.createKey},
		{fiber.MethodDelete, "/api/v2/keys/:id", domain.PermKeysWrite, s.revokeKey},
		{fiber.MethodGet, "/api/v2/service-accounts", domain.PermKeysManage, s.listServiceAccounts},
		{fiber.MethodPost, "/api/v2/service-accounts", domain.PermKeysManage, s.createServiceAccount},
		{fiber.MethodPut, "/api/v2/key-owners/:subject", domain.PermKeysManage, s.putKeyOwner},
	}
}

// authenticateKey accepts a managed key (aak_…), decided by the managed
// keys alone: such a credential never reaches another authenticator.
func (s *Server) authenticateKey(c *fiber.Ctx, text string) error {
	p, err := s.uc.Keys.Authenticate(c.UserContext(), text)
	if err != nil {
		return err
	}
	st := stateOf(c)
	st.principal, st.authenticated = p, true
	st.intent.Subject, st.intent.Roles, st.intent.AuthMethod = p.Subject, p.Roles, p.Method
	note(c, p.RoleSource) // "managed key <id> (<name>)", made once per key
	return c.Next()
}

// observeOwner keeps the owner record of a caller who owns keys current
// with the roles it authenticated with now; a change is named in the
// request's audit record.
func (s *Server) observeOwner(c *fiber.Ctx, p domain.Principal) error {
	if s.uc.Keys == nil {
		return nil
	}
	changed, err := s.uc.Keys.Observe(c.UserContext(), p)
	if changed && err == nil {
		stateOf(c).keyOwnerChange = "the managed keys of " + p.Subject + " now follow roles [" + domain.JoinRoles(p.Roles) + "]"
	}
	return err
}

// isManagedKey reports whether a credential is for the managed keys.
func (s *Server) isManagedKey(cred ports.Credential) bool {
	return s.uc.Keys != nil && cred.Kind == ports.CredentialBearer && domain.LooksLikeManagedKey(cred.Value)
}

type keyJSON struct {
	ID          string              `json:"id"`
	Name        string              `json:"name"`
	Prefix      string              `json:"prefix"`
	Owner       string              `json:"owner"`
	OwnerName   string              `json:"owner_name,omitempty"`
	Status      string              `json:"status"`
	Permissions []domain.Permission `json:"permissions"`
	Projects    []string            `json:"projects"`
	Tools       []string            `json:"tools"`
	CreatedBy   string              `json:"created_by"`
	CreatedAt   time.Time           `json:"created_at"`
	ExpiresAt   time.Time           `json:"expires_at"`
	LastUsedAt  *time.Time          `json:"last_used_at"`
	RevokedAt   *time.Time          `json:"revoked_at"`
	// Key is the secret, in the answer to its creation only.
	Key string `json:"key,omitempty"`
}

func toKeyJSON(k domain.APIKey, now time.Time) keyJSON {
	j := keyJSON{ID: k.ID, Name: k.Name, Prefix: domain.KeyPrefix + k.ID + "_", Owner: k.Owner, Status: "active",
		Permissions: k.Permissions, Projects: k.Projects, Tools: k.Tools, CreatedBy: k.CreatedBy,
		CreatedAt: k.CreatedAt.UTC(), ExpiresAt: k.ExpiresAt.UTC()}
	if !k.LastUsed.IsZero() {
		t := k.LastUsed.UTC()
		j.LastUsedAt = &t
	}
	switch {
	case !k.RevokedAt.IsZero():
		t := k.RevokedAt.UTC()
		j.RevokedAt, j.Status = &t, "revoked"
	case !now.Before(k.ExpiresAt):
		j.Status = "expired"
	}
	return j
}

type createKeyRequest struct {
	Name           string              `json:"name"`
	Permissions    []domain.Permission `json:"permissions"`
	Projects       []string            `json:"projects"`
	Tools          []string            `json:"tools"`
	ExpiresAt      time.Time           `json:"expires_at"`
	ServiceAccount string              `json:"service_account"`
}

func (s *Server) createKey(c *fiber.Ctx) error {
	var req createKeyRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	k, err := s.uc.Keys.Create(c.UserContext(), principalOf(c), app.KeyRequest{Name: req.Name, Permissions: req.Permissions,
		Projects: req.Projects, Tools: req.Tools, ExpiresAt: req.ExpiresAt, ServiceAccount: req.ServiceAccount})
	if err != nil {
		return err
	}
	note(c, "made managed key "+k.Key.ID+" for "+k.Key.Owner+" with "+joinPerms(k.Key.Permissions)+" until "+k.Key.ExpiresAt.UTC().Format(time.RFC3339))
	j := toKeyJSON(k.Key, time.Now())
	j.Key = k.Secret
	c.Location("/api/v2/keys/" + k.Key.ID)
	return c.Status(fiber.StatusCreated).JSON(j)
}

func joinPerms(perms []domain.Permission) string {
	names := make([]string, len(perms))
	for i, p := range perms {
		names[i] = string(p)
	}
	return "[" + strings.Join(names, " ") + "]"
}

func (s *Server) listKeys(c *fiber.Ctx) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	page, err := s.uc.Keys.List(c.UserContext(), principalOf(c), req)
	if err != nil {
		return err
	}
	now := time.Now()
	return writeNamedPage(s, c, "keys", page, func(k domain.APIKey) ([]string, []string) { return []string{k.Owner}, nil },
		func(k domain.APIKey, n answerNames) keyJSON {
			j := toKeyJSON(k, now)
			j.OwnerName = n.people[k.Owner]
			return j
		})
}

func (s *Server) revokeKey(c *fiber.Ctx) error {
	id := c.Params("id")
	if !domain.ValidKeyID(id) {
		return fmt.Errorf("key %q: %w", id, domain.ErrNotFound)
	}
	confirmed, err := s.uc.Keys.Revoke(c.UserContext(), principalOf(c), id)
	if err != nil {
		return err
	}
	note(c, "revoked managed key "+id+confirmation(confirmed))
	return c.SendStatus(fiber.StatusNoContent)
}

type serviceAccountJSON struct {
	Name     string        `json:"name"`
	Subject  string        `json:"subject"`
	Roles    []domain.Role `json:"roles"`
	Disabled bool          `json:"disabled"`
}

func toServiceAccountJSON(o domain.KeyOwner) serviceAccountJSON {
	return serviceAccountJSON{Name: strings.TrimPrefix(o.Subject, domain.ServiceAccountSubject("")), Subject: o.Subject, Roles: o.Roles, Disabled: o.Disabled}
}

type createServiceAccountRequest struct {
	Name string      `json:"name"`
	Role domain.Role `json:"role"`
}

func (s *Server) createServiceAccount(c *fiber.Ctx) error {
	var req createServiceAccountRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	o, err := s.uc.Keys.CreateServiceAccount(c.UserContext(), req.Name, req.Role)
	if err != nil {
		return err
	}
	note(c, "made service account "+o.Subject+" with role "+string(req.Role))
	return c.Status(fiber.StatusCreated).JSON(toServiceAccountJSON(o))
}

func (s *Server) listServiceAccounts(c *fiber.Ctx) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	page, err := s.uc.Keys.ServiceAccounts(c.UserContext(), req)
	if err != nil {
		return err
	}
	return writePage(c, "service_accounts", page, toServiceAccountJSON)
}

type keyOwnerRequest struct {
	Disabled *bool `json:"disabled"`
}

// putKeyOwner suspends or restores every key of a subject (a person an
// ADMIN disabled, a service account).
func (s *Server) putKeyOwner(c *fiber.Ctx) error {
	subject, err := url.PathUnescape(c.Params("subject"))
	if err != nil || subject == "" {
		return fmt.Errorf("key owner: %w", domain.ErrNotFound)
	}
	var req keyOwnerRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Disabled == nil {
		return fmt.Errorf("disabled (true or false) is required: %w", domain.ErrInvalidInput)
	}
	confirmed, err := s.uc.Keys.SetOwnerDisabled(c.UserContext(), subject, *req.Disabled)
	if err != nil {
		return err
	}
	note(c, map[bool]string{true: "suspended", false: "restored"}[*req.Disabled]+" the managed keys of "+subject+confirmation(confirmed))
	return c.SendStatus(fiber.StatusNoContent)
}

// confirmation says in the audit record whether every instance acknowledged
// a key change before the answer.
func confirmation(confirmed bool) string {
	if confirmed {
		return " (acknowledged by every instance)"
	}
	return " (NOT acknowledged by every instance within 2 s: one lost its notifications and reads keys from the database, or is stuck)"
}
