package rest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/adapters/auditjson"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
	"github.com/agentauth/agentauth/ports"
)

// accessRoutes lists the access-model endpoints, each with the permission
// its role must grant; resource-level rules (ownership, project leads) are
// applied by the use cases.
func (s *Server) accessRoutes() []route {
	return []route{
		{fiber.MethodPatch, "/api/v2/sessions/:id", domain.PermSessionsWrite, s.patchSession},

		{fiber.MethodGet, "/api/v2/projects", domain.PermProjectsRead, s.listProjects},
		{fiber.MethodPost, "/api/v2/projects", domain.PermProjectsCreate, s.createProject},
		{fiber.MethodGet, "/api/v2/projects/:id", domain.PermProjectsRead, s.getProject},
		{fiber.MethodGet, "/api/v2/projects/:id/members", domain.PermProjectsRead, s.listMembers},
		{fiber.MethodPut, "/api/v2/projects/:id/members", domain.PermProjectsWrite, s.putMembers},

		{fiber.MethodGet, "/api/v2/servers", domain.PermServersRead, s.listServers},
		{fiber.MethodPost, "/api/v2/servers", domain.PermServersWrite, s.createServer},
		{fiber.MethodPut, "/api/v2/servers/:name", domain.PermServersWrite, s.changeServer(true)},
		{fiber.MethodPatch, "/api/v2/servers/:name", domain.PermServersWrite, s.changeServer(false)},
		{fiber.MethodDelete, "/api/v2/servers/:name", domain.PermServersWrite, s.deleteServer},
		{fiber.MethodGet, "/api/v2/tools", domain.PermToolsRead, s.listTools},
		{fiber.MethodPost, "/api/v2/tools", domain.PermToolsWrite, s.createTool},
		{fiber.MethodPut, "/api/v2/tools/:name", domain.PermToolsWrite, s.changeTool(true)},
		{fiber.MethodPatch, "/api/v2/tools/:name", domain.PermToolsWrite, s.changeTool(false)},
		{fiber.MethodDelete, "/api/v2/tools/:name", domain.PermToolsWrite, s.deleteTool},
		{fiber.MethodGet, "/api/v2/tools/:name/definition", domain.PermToolsRead, s.toolDefinition},
		{fiber.MethodPost, "/api/v2/tools/:name/definition/accept", domain.PermToolsWrite, s.acceptToolDefinition},

		{fiber.MethodGet, "/api/v2/policies", domain.PermPoliciesRead, s.listPolicies},
		{fiber.MethodPost, "/api/v2/policies", domain.PermPoliciesWrite, s.createPolicy},
		{fiber.MethodDelete, "/api/v2/policies/:id", domain.PermPoliciesWrite, s.deletePolicy},
		{fiber.MethodGet, "/api/v2/policies/simulate", domain.PermPoliciesRead, s.simulatePolicy},

		{fiber.MethodGet, "/api/v2/sessions/:id/agents", domain.PermSessionsRead, s.listAgents},
		{fiber.MethodPost, "/api/v2/sessions/:id/agents", domain.PermAgentsWrite, s.createAgent},
		{fiber.MethodGet, "/api/v2/sessions/:id/tool-calls", domain.PermSessionsRead, s.listToolCalls},
		{fiber.MethodPost, "/api/v2/sessions/:id/tool-calls", domain.PermToolCallsWrite, s.createToolCall},
		{fiber.MethodPost, "/api/v2/sessions/:id/tool-calls/:call/approve", domain.PermToolCallsApprove, s.resolveToolCall(true)},
		{fiber.MethodPost, "/api/v2/sessions/:id/tool-calls/:call/reject", domain.PermToolCallsApprove, s.resolveToolCall(false)},

		{fiber.MethodGet, "/api/v2/dashboard", domain.PermDashboardRead, s.dashboard},

		{fiber.MethodGet, "/api/v2/audit/export", domain.PermAuditExport, s.exportAudit},
		{fiber.MethodGet, "/api/v2/audit/verify", domain.PermAuditRead, s.verifyAudit},
		{fiber.MethodGet, "/api/v2/audit/checkpoints", domain.PermAuditRead, s.listCheckpoints},
	}
}

// note adds to the request's audit reason.
func note(c *fiber.Ctx, s string) { stateOf(c).note = s }

// refused marks a request that was answered but whose purpose was refused
// (a tool call decided deny), so the audit log counts it among denials.
func refused(c *fiber.Ctx) { stateOf(c).refused = true }

// --- sessions ---

type patchSessionRequest struct {
	Mode string `json:"mode"`
}

func (s *Server) patchSession(c *fiber.Ctx) error {
	var req patchSessionRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	sess, err := s.uc.Sessions.SetMode(c.UserContext(), principalOf(c), c.Params("id"), req.Mode)
	if err != nil {
		return err
	}
	note(c, "mode set to "+string(sess.Mode))
	return c.JSON(toSessionJSON(sess))
}

// --- projects ---

type memberJSON struct {
	Subject string `json:"subject"`
	Lead    bool   `json:"lead"`
}

type projectJSON struct {
	ID          string       `json:"id"`
	Name        string       `json:"name"`
	Members     []memberJSON `json:"members"`
	MembersMore bool         `json:"members_more"`
	CreatedBy   string       `json:"created_by"`
	CreatedAt   time.Time    `json:"created_at"`
}

// toProjectJSON shows at most ports.EmbeddedMembers of a project's members,
// the first by subject; members_more says there are others, which
// GET /api/v2/projects/{id}/members pages.
func toProjectJSON(p domain.Project) projectJSON {
	members := slices.SortedFunc(slices.Values(p.Members), func(a, b domain.Member) int { return strings.Compare(a.Subject, b.Subject) })
	out := projectJSON{ID: p.ID, Name: p.Name, Members: []memberJSON{}, MembersMore: len(members) > ports.EmbeddedMembers, CreatedBy: p.CreatedBy, CreatedAt: p.CreatedAt}
	for _, m := range members[:min(len(members), ports.EmbeddedMembers)] {
		out.Members = append(out.Members, memberJSON(m))
	}
	return out
}

func fromMembers(in []memberJSON) []domain.Member {
	out := make([]domain.Member, len(in))
	for i, m := range in {
		out[i] = domain.Member(m)
	}
	return out
}

func (s *Server) listProjects(c *fiber.Ctx) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	page, err := s.uc.Projects.List(c.UserContext(), principalOf(c), req)
	if err != nil {
		return err
	}
	return writePage(c, "projects", page, toProjectJSON)
}

type createProjectRequest struct {
	Name    string       `json:"name"`
	Members []memberJSON `json:"members"`
}

func (s *Server) createProject(c *fiber.Ctx) error {
	var req createProjectRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	p, err := s.uc.Projects.Create(c.UserContext(), principalOf(c), req.Name, fromMembers(req.Members))
	if err != nil {
		return err
	}
	c.Location("/api/v2/projects/" + p.ID)
	return c.Status(fiber.StatusCreated).JSON(toProjectJSON(p))
}

func (s *Server) getProject(c *fiber.Ctx) error {
	p, err := s.uc.Projects.Get(c.UserContext(), principalOf(c), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(toProjectJSON(p))
}

func (s *Server) listMembers(c *fiber.Ctx) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	page, err := s.uc.Projects.Members(c.UserContext(), principalOf(c), c.Params("id"), req)
	if err != nil {
		return err
	}
	return writePage(c, "members", page, func(m domain.Member) memberJSON { return memberJSON(m) })
}

type membersRequest struct {
	Members []memberJSON `json:"members"`
}

func (s *Server) putMembers(c *fiber.Ctx) error {
	var req membersRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	p, err := s.uc.Projects.SetMembers(c.UserContext(), principalOf(c), c.Params("id"), fromMembers(req.Members))
	if err != nil {
		return err
	}
	return c.JSON(toProjectJSON(p))
}

// --- servers and tools ---

// serverJSON is a registered server as the API shows it: the name of its
// upstream credential, never the credential.
type serverJSON struct {
	Name       string `json:"name"`
	URL        string `json:"url"`
	Endpoint   string `json:"endpoint,omitempty"`
	Credential string `json:"credential,omitempty"`
	// UpstreamAuth is how the upstream authorizes each person's calls.
	UpstreamAuth *upstreamAuthJSON `json:"upstream_auth,omitempty"`
	CreatedAt    time.Time         `json:"created_at"`
}

// upstreamAuthJSON is a server's upstream_auth; client_secret names a
// file in gateway.credentialsDir, never a secret.
type upstreamAuthJSON struct {
	Type         domain.UpstreamAuthType `json:"type"`
	Issuer       string                  `json:"issuer,omitempty"`
	ClientID     string                  `json:"client_id,omitempty"`
	ClientSecret string                  `json:"client_secret,omitempty"`
	Scopes       []string                `json:"scopes,omitempty"`
	Resource     string                  `json:"resource,omitempty"`
	Audience     string                  `json:"audience,omitempty"`
}

func toServerJSON(sv domain.Server) serverJSON {
	out := serverJSON{Name: sv.Name, URL: sv.URL, Endpoint: sv.Endpoint, Credential: sv.Credential, CreatedAt: sv.CreatedAt}
	if u := sv.UpstreamAuth; u != nil {
		j := upstreamAuthJSON(*u)
		out.UpstreamAuth = &j
	}
	return out
}

// upstreamAuthOf reads an upstream_auth member: nil when absent or null.
func upstreamAuthOf(raw json.RawMessage) (*domain.UpstreamAuth, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var j upstreamAuthJSON
	if err := decodeStrict("upstream_auth", raw, &j); err != nil {
		return nil, err
	}
	u := domain.UpstreamAuth(j)
	return &u, nil
}

func (s *Server) listServers(c *fiber.Ctx) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	page, err := s.uc.Catalog.ListServers(c.UserContext(), req)
	if err != nil {
		return err
	}
	return writePage(c, "servers", page, toServerJSON)
}

type createServerRequest struct {
	Name         string          `json:"name"`
	URL          string          `json:"url"`
	Endpoint     string          `json:"endpoint"`
	Credential   string          `json:"credential"`
	UpstreamAuth json.RawMessage `json:"upstream_auth"`
}

func (s *Server) createServer(c *fiber.Ctx) error {
	var req createServerRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	auth, err := upstreamAuthOf(req.UpstreamAuth)
	if err != nil {
		return err
	}
	sv, err := s.uc.Catalog.CreateServer(c.UserContext(), domain.Server{Name: req.Name, URL: req.URL, Endpoint: req.Endpoint, Credential: req.Credential,
		UpstreamAuth: auth})
	if err != nil {
		return err
	}
	if auth != nil {
		note(c, "server "+sv.Name+" upstream_auth "+auth.String())
	}
	return c.Status(fiber.StatusCreated).JSON(toServerJSON(sv))
}

type toolJSON struct {
	Name     string `json:"name"`
	Server   string `json:"server"`
	ReadOnly bool   `json:"read_only"`
	// SecondApprover: its calls that need approval must be approved by
	// someone other than the session's owner.
	SecondApprover bool       `json:"second_approver"`
	Description    string     `json:"description"`
	Limit          *limitJSON `json:"limit,omitempty"`
	// DefinitionSHA256 is the digest of the pinned definition ("": not
	// pinned yet); DefinitionChanged: its server declares it otherwise
	// since, and it is hidden and refused until an ADMIN accepts that.
	DefinitionSHA256  string `json:"definition_sha256,omitempty"`
	DefinitionChanged bool   `json:"definition_changed,omitempty"`
	// CreatedAt is absent from a tool an import only proposes (a dry run).
	CreatedAt time.Time `json:"created_at,omitzero"`
}

func toToolJSON(t domain.Tool) toolJSON {
	return toolJSON{Name: t.Name, Server: t.Server, ReadOnly: t.ReadOnly, SecondApprover: t.SecondApprover, Description: t.Description,
		Limit: toLimitJSON(t.Limit), DefinitionSHA256: t.Pin.Digest, DefinitionChanged: t.Pin.Drifted(), CreatedAt: t.CreatedAt}
}

// definitionJSON is a tool's pinned definition beside the one its server
// declares since, for an ADMIN to review.
type definitionJSON struct {
	Name          string          `json:"name"`
	Server        string          `json:"server"`
	Pinned        json.RawMessage `json:"pinned"`
	PinnedSHA256  string          `json:"pinned_sha256"`
	Changed       json.RawMessage `json:"changed,omitempty"`
	ChangedSHA256 string          `json:"changed_sha256,omitempty"`
	ChangedAt     *time.Time      `json:"changed_at,omitempty"`
}

func toDefinitionJSON(t domain.Tool) definitionJSON {
	out := definitionJSON{Name: t.Name, Server: t.Server, Pinned: rawOrNull(t.Pin.Definition), PinnedSHA256: t.Pin.Digest}
	if t.Pin.Drifted() {
		at := t.Pin.ChangedAt
		out.Changed, out.ChangedSHA256, out.ChangedAt = rawOrNull(t.Pin.Changed), t.Pin.ChangedDigest, &at
	}
	return out
}

func rawOrNull(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage("null")
	}
	return json.RawMessage(s)
}

func (s *Server) toolDefinition(c *fiber.Ctx) error {
	name, err := pathName(c)
	if err != nil {
		return err
	}
	t, err := s.uc.Gateway.ToolDefinition(c.UserContext(), name)
	if err != nil {
		return err
	}
	return c.JSON(toDefinitionJSON(t))
}

type acceptDefinitionRequest struct {
	SHA256 string `json:"sha256"`
}

func (s *Server) acceptToolDefinition(c *fiber.Ctx) error {
	var req acceptDefinitionRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	name, err := pathName(c)
	if err != nil {
		return err
	}
	a, err := s.uc.Gateway.AcceptDefinition(c.UserContext(), name, req.SHA256)
	if err != nil {
		return err
	}
	note(c, a.String())
	return c.JSON(toDefinitionJSON(a.Tool))
}

// limitJSON is a limit as the API writes it: {"calls":100,"per":"1h","by":"agent"}.
type limitJSON struct {
	Calls int    `json:"calls"`
	Per   string `json:"per"`
	By    string `json:"by"`
}

func toLimitJSON(l domain.Limit) *limitJSON {
	if l.IsZero() {
		return nil
	}
	return &limitJSON{Calls: l.Calls, Per: domain.PerText(l.Per), By: string(l.By)}
}

// limit reads a limit; nil is none.
func (l *limitJSON) limit() (domain.Limit, error) {
	if l == nil {
		return domain.Limit{}, nil
	}
	return domain.ParseLimit(l.Calls, l.Per, l.By)
}

func (s *Server) listTools(c *fiber.Ctx) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	page, err := s.uc.Catalog.ListTools(c.UserContext(), principalOf(c), req)
	if err != nil {
		return err
	}
	return writePage(c, "tools", page, func(t domain.Tool) toolJSON { return toToolJSON(t) })
}

type createToolRequest struct {
	Name           string     `json:"name"`
	Server         string     `json:"server"`
	ReadOnly       bool       `json:"read_only"`
	SecondApprover bool       `json:"second_approver"`
	Description    string     `json:"description"`
	Limit          *limitJSON `json:"limit"`
}

func (s *Server) createTool(c *fiber.Ctx) error {
	var req createToolRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	limit, err := req.Limit.limit()
	if err != nil {
		return err
	}
	t, err := s.uc.Catalog.CreateTool(c.UserContext(), domain.Tool{Name: req.Name, Server: req.Server, ReadOnly: req.ReadOnly,
		SecondApprover: req.SecondApprover, Description: req.Description, Limit: limit})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(toToolJSON(t))
}

// changeServerRequest is a server's registration as PUT replaces it
// (every field; absent: empty) or PATCH changes it (absent: as it is). A
// name, when given, is the one in the path.
type changeServerRequest struct {
	Name       *string `json:"name"`
	URL        *string `json:"url"`
	Endpoint   *string `json:"endpoint"`
	Credential *string `json:"credential"`
	// UpstreamAuth: absent leaves it (PATCH), null removes it.
	UpstreamAuth json.RawMessage `json:"upstream_auth"`
}

func (s *Server) changeServer(replace bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req changeServerRequest
		if err := decodeJSON(c, &req); err != nil {
			return err
		}
		name, err := pathName(c)
		if err != nil {
			return err
		}
		if err := samePathName(req.Name, name); err != nil {
			return err
		}
		if replace {
			for _, f := range []**string{&req.URL, &req.Endpoint, &req.Credential} {
				if *f == nil {
					*f = new(string)
				}
			}
		}
		ch := app.ServerChange{URL: req.URL, Endpoint: req.Endpoint, Credential: req.Credential}
		if ch.SetUpstreamAuth = replace || req.UpstreamAuth != nil; ch.SetUpstreamAuth {
			if ch.UpstreamAuth, err = upstreamAuthOf(req.UpstreamAuth); err != nil {
				return err
			}
		}
		before, after, err := s.uc.Catalog.ChangeServer(c.UserContext(), name, ch)
		if err != nil {
			return err
		}
		note(c, fmt.Sprintf("server %s changed: url %q → %q, endpoint %q → %q, credential %q → %q, upstream_auth %s → %s", name,
			before.URL, after.URL, before.Endpoint, after.Endpoint, before.Credential, after.Credential, before.UpstreamAuth, after.UpstreamAuth))
		return c.JSON(toServerJSON(after))
	}
}

// samePathName refuses a body naming another resource than its path.
func samePathName(body *string, path string) error {
	if body != nil && *body != path {
		return fmt.Errorf("name %q differs from the path's %q: a registration keeps its name (remove it and register another): %w", *body, path, domain.ErrInvalidInput)
	}
	return nil
}

// pathName is the :name of a server's or tool's path, unescaped: names
// may hold "/" (sent as %2F) and ":".
func pathName(c *fiber.Ctx) (string, error) {
	name, err := url.PathUnescape(c.Params("name"))
	if err != nil {
		return "", fmt.Errorf("name in the path: %v: %w", err, domain.ErrInvalidInput)
	}
	return name, nil
}

func (s *Server) deleteServer(c *fiber.Ctx) error {
	name, err := pathName(c)
	if err != nil {
		return err
	}
	if err := s.uc.Catalog.DeleteServer(c.UserContext(), name); err != nil {
		return err
	}
	note(c, "server "+name+" removed")
	return c.SendStatus(fiber.StatusNoContent)
}

// changeToolRequest is a tool's registration as PUT replaces it (every
// field; absent: empty or false) or PATCH changes it (absent: as it is).
type changeToolRequest struct {
	Name           *string `json:"name"`
	Server         *string `json:"server"`
	ReadOnly       *bool   `json:"read_only"`
	SecondApprover *bool   `json:"second_approver"`
	Description    *string `json:"description"`
	// Limit: {} or null removes the limit.
	Limit **limitJSON `json:"limit"`
}

func (s *Server) changeTool(replace bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req changeToolRequest
		if err := decodeJSON(c, &req); err != nil {
			return err
		}
		name, err := pathName(c)
		if err != nil {
			return err
		}
		if req.Name != nil {
			canonical, err := domain.CanonicalToolName(*req.Name)
			if err != nil {
				return err
			}
			req.Name = &canonical
			if err := samePathName(req.Name, strings.ToLower(name)); err != nil {
				return err
			}
		}
		if replace {
			for _, f := range []**string{&req.Server, &req.Description} {
				if *f == nil {
					*f = new(string)
				}
			}
			for _, f := range []**bool{&req.ReadOnly, &req.SecondApprover} {
				if *f == nil {
					*f = new(bool)
				}
			}
		}
		ch := app.ToolChange{Server: req.Server, ReadOnly: req.ReadOnly, SecondApprover: req.SecondApprover, Description: req.Description}
		if req.Limit != nil || replace {
			var l *limitJSON
			if req.Limit != nil && *req.Limit != nil && (**req.Limit != limitJSON{}) {
				l = *req.Limit
			}
			limit, err := l.limit()
			if err != nil {
				return err
			}
			ch.Limit = &limit
		}
		before, after, err := s.uc.Catalog.ChangeTool(c.UserContext(), name, ch)
		if err != nil {
			return err
		}
		note(c, fmt.Sprintf("tool %s changed: server %s → %s, read_only %t → %t, second_approver %t → %t, description of %d → %d bytes", after.Name,
			before.Server, after.Server, before.ReadOnly, after.ReadOnly, before.SecondApprover, after.SecondApprover, len(before.Description), len(after.Description)))
		return c.JSON(toToolJSON(after))
	}
}

func (s *Server) deleteTool(c *fiber.Ctx) error {
	name, err := pathName(c)
	if err != nil {
		return err
	}
	if err := s.uc.Catalog.DeleteTool(c.UserContext(), name); err != nil {
		return err
	}
	note(c, "tool "+name+" removed")
	return c.SendStatus(fiber.StatusNoContent)
}

// --- policies ---

type policyJSON struct {
	ID        string     `json:"id"`
	Effect    string     `json:"effect"`
	Tool      string     `json:"tool"`
	Scope     string     `json:"scope"`
	Value     string     `json:"value"`
	When      string     `json:"when,omitempty"`
	Limit     *limitJSON `json:"limit,omitempty"`
	CreatedBy string     `json:"created_by"`
	CreatedAt time.Time  `json:"created_at"`
}

func toPolicyJSON(r domain.PolicyRule) policyJSON {
	return policyJSON{ID: r.ID, Effect: string(r.Effect), Tool: r.Tool, Scope: string(r.Scope), Value: r.Value, When: r.When,
		Limit: toLimitJSON(r.Limit), CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt}
}

func (s *Server) listPolicies(c *fiber.Ctx) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	page, err := s.uc.Policies.List(c.UserContext(), req)
	if err != nil {
		return err
	}
	return writePage(c, "policies", page, toPolicyJSON)
}

type createPolicyRequest struct {
	Effect string     `json:"effect"`
	Tool   string     `json:"tool"`
	Scope  string     `json:"scope"`
	Value  string     `json:"value"`
	When   string     `json:"when"`
	Limit  *limitJSON `json:"limit"`
}

func (s *Server) createPolicy(c *fiber.Ctx) error {
	var req createPolicyRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	limit, err := req.Limit.limit()
	if err != nil {
		return err
	}
	r, err := s.uc.Policies.Create(c.UserContext(), principalOf(c), domain.PolicyRule{
		Effect: domain.Effect(req.Effect), Tool: req.Tool, Scope: domain.ScopeKind(req.Scope), Value: req.Value, When: req.When, Limit: limit})
	if err != nil {
		return err
	}
	c.Location("/api/v2/policies/" + r.ID)
	return c.Status(fiber.StatusCreated).JSON(toPolicyJSON(r))
}

type ruleStepJSON struct {
	Rule   policyJSON `json:"rule"`
	Result string     `json:"result"`
	Error  string     `json:"error,omitempty"`
}

type simulateResponse struct {
	Decision string         `json:"decision"`
	Reason   string         `json:"reason"`
	Rule     string         `json:"rule,omitempty"`
	Message  string         `json:"message"`
	Steps    []ruleStepJSON `json:"steps"`
}

// simulatePolicy decides, as if it were made, the call its query names:
// tool, args (a JSON object), role (comma-separated or repeated),
// subject, project, mode, depth, chain (comma-separated), server.
func (s *Server) simulatePolicy(c *fiber.Ctx) error {
	q := c.Context().QueryArgs()
	args, err := mcpwire.CanonicalArguments(json.RawMessage(c.Query("args", "{}")))
	if err != nil {
		return fmt.Errorf("args: %v: %w", err, domain.ErrInvalidInput)
	}
	var roles []domain.Role
	for _, v := range q.PeekMulti("role") {
		for _, r := range strings.Split(string(v), ",") {
			if r = strings.TrimSpace(r); r != "" {
				roles = append(roles, domain.Role(strings.ToUpper(r)))
			}
		}
	}
	var chain []string
	if v := c.Query("chain"); v != "" {
		chain = strings.Split(v, ",")
	}
	depth, err := strconv.Atoi(c.Query("depth", "0"))
	if err != nil || depth < 0 {
		return fmt.Errorf("depth %q: want a number from 0: %w", c.Query("depth"), domain.ErrInvalidInput)
	}
	d, steps, err := s.uc.Policies.Simulate(c.UserContext(), s.uc.Authorizer, app.Simulation{Subject: c.Query("subject"), Roles: roles,
		Project: c.Query("project"), Mode: domain.SessionMode(c.Query("mode", string(domain.ModeAuto))), Depth: depth, Chain: chain,
		Tool: c.Query("tool"), Server: c.Query("server"), Arguments: args})
	if err != nil {
		return err
	}
	out := simulateResponse{Decision: string(d.Effect), Reason: d.Reason, Rule: d.Rule, Message: d.Message, Steps: make([]ruleStepJSON, len(steps))}
	for i, st := range steps {
		out.Steps[i] = ruleStepJSON{Rule: toPolicyJSON(st.Rule), Result: st.Result, Error: st.Error}
	}
	return c.JSON(out)
}

func (s *Server) deletePolicy(c *fiber.Ctx) error {
	if err := s.uc.Policies.Delete(c.UserContext(), c.Params("id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// --- agents ---

type agentJSON struct {
	ID string `json:"id"`
	// Name is its maker's label for it; absent when none.
	Name      string   `json:"name,omitempty"`
	Session   string   `json:"session"`
	Parent    string   `json:"parent,omitempty"`
	Depth     int      `json:"depth"`
	Tools     []string `json:"tools"` // null: every tool
	ReadOnly  bool     `json:"read_only"`
	Approval  bool     `json:"approval"`
	CreatedBy string   `json:"created_by"`
	// CreatedByName names its maker where known (lists).
	CreatedByName string    `json:"created_by_name,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
}

func toAgentJSON(a domain.Agent) agentJSON {
	return agentJSON{ID: a.ID, Name: a.Name, Session: a.Session, Parent: a.Parent, Depth: a.Depth, Tools: a.Limits.Tools,
		ReadOnly: a.Limits.ReadOnly, Approval: a.Limits.Approval, CreatedBy: a.CreatedBy, CreatedAt: a.CreatedAt}
}

func (s *Server) listAgents(c *fiber.Ctx) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	page, err := s.uc.Agents.List(c.UserContext(), principalOf(c), c.Params("id"), req)
	if err != nil {
		return err
	}
	return writeNamedPage(s, c, "agents", page, func(a domain.Agent) ([]string, []string) { return []string{a.CreatedBy}, nil },
		func(a domain.Agent, n answerNames) agentJSON {
			j := toAgentJSON(a)
			j.CreatedByName = n.people[a.CreatedBy]
			return j
		})
}

type createAgentRequest struct {
	Parent string   `json:"parent"`
	Tools  []string `json:"tools"`
	Mode   string   `json:"mode"`
	Name   string   `json:"name"`
}

func (s *Server) createAgent(c *fiber.Ctx) error {
	var req createAgentRequest
	if len(c.Body()) == 0 {
		c.Request().SetBody([]byte("{}")) // a root agent needs no body
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	a, err := s.uc.Agents.Create(c.UserContext(), principalOf(c), c.Params("id"), app.NewAgent(req))
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(toAgentJSON(a))
}

// --- tool calls ---

type toolCallJSON struct {
	ID       string `json:"id"`
	Session  string `json:"session"`
	Agent    string `json:"agent"`
	Tool     string `json:"tool"`
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
	Rule     string `json:"rule,omitempty"`
	Message  string `json:"message"`
	// RetryAt: when a call refused quota_exceeded may be made again.
	RetryAt     *time.Time `json:"retry_at,omitempty"`
	Status      string     `json:"status"`
	RequestedBy string     `json:"requested_by"`
	CreatedAt   time.Time  `json:"created_at"`
	ResolvedBy  string     `json:"resolved_by,omitempty"`
	ResolvedAt  *time.Time `json:"resolved_at,omitempty"`
	// AgentName, RequestedByName and ResolvedByName name the agent and
	// the people where known (lists).
	AgentName       string `json:"agent_name,omitempty"`
	RequestedByName string `json:"requested_by_name,omitempty"`
	ResolvedByName  string `json:"resolved_by_name,omitempty"`
	// Arguments (RFC 8785 canonical JSON) and ArgsHash, their SHA-256:
	// what an approval binds to; UsedAt: when the gateway used the
	// approval. Calls stored before arguments were kept have none.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	ArgsHash  string          `json:"args_sha256,omitempty"`
	UsedAt    *time.Time      `json:"used_at,omitempty"`
}

func toToolCallJSON(tc domain.ToolCall) toolCallJSON {
	out := toolCallJSON{ID: tc.ID, Session: tc.Session, Agent: tc.Agent, Tool: tc.Tool, Decision: string(tc.Decision.Effect),
		Reason: tc.Decision.Reason, Rule: tc.Decision.Rule, Message: tc.Decision.Message, Status: string(tc.Status),
		RequestedBy: tc.RequestedBy, CreatedAt: tc.CreatedAt, ResolvedBy: tc.ResolvedBy, Arguments: tc.Arguments, ArgsHash: tc.ArgsHash}
	if !tc.ResolvedAt.IsZero() {
		at := tc.ResolvedAt
		out.ResolvedAt = &at
	}
	if !tc.UsedAt.IsZero() {
		at := tc.UsedAt
		out.UsedAt = &at
	}
	if !tc.Decision.RetryAt.IsZero() {
		at := tc.Decision.RetryAt
		out.RetryAt = &at
	}
	return out
}

func (s *Server) listToolCalls(c *fiber.Ctx) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	page, err := s.uc.ToolCalls.List(c.UserContext(), principalOf(c), c.Params("id"), req)
	if err != nil {
		return err
	}
	return writeNamedPage(s, c, "tool_calls", page,
		func(tc domain.ToolCall) ([]string, []string) {
			return []string{tc.RequestedBy, tc.ResolvedBy}, []string{tc.Agent}
		},
		func(tc domain.ToolCall, n answerNames) toolCallJSON {
			j := toToolCallJSON(tc)
			j.AgentName, j.RequestedByName, j.ResolvedByName = n.agents[tc.Agent], n.people[tc.RequestedBy], n.people[tc.ResolvedBy]
			return j
		})
}

type createToolCallRequest struct {
	Agent     string          `json:"agent"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

func (s *Server) createToolCall(c *fiber.Ctx) error {
	var req createToolCallRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	args, err := mcpwire.CanonicalArguments(req.Arguments)
	if err != nil {
		return fmt.Errorf("%v: %w", err, domain.ErrInvalidInput)
	}
	call := app.CallRequest{Agent: req.Agent, Tool: req.Tool, Arguments: args}
	var tc domain.ToolCall
	if stateOf(c).agent != nil {
		tc, err = s.uc.ToolCalls.DecideWithToken(c.UserContext(), verifiedAgentOf(c), c.Params("id"), call)
	} else {
		tc, err = s.uc.ToolCalls.Decide(c.UserContext(), principalOf(c), c.Params("id"), call)
	}
	if err != nil {
		return err
	}
	prev := stateOf(c).note // an agent token's chain
	if prev != "" {
		prev += "; "
	}
	note(c, prev+"tool call "+tc.ID+" "+tc.Tool+": "+string(tc.Decision.Effect)+" ("+tc.Decision.Reason+")"+s.auditedArguments(tc))
	if tc.Decision.Effect == domain.EffectDeny {
		refused(c)
	}
	return c.Status(fiber.StatusCreated).JSON(toToolCallJSON(tc))
}

func (s *Server) resolveToolCall(approve bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		tc, err := s.uc.ToolCalls.Resolve(c.UserContext(), principalOf(c), c.Params("id"), c.Params("call"), approve)
		if err != nil {
			return err
		}
		note(c, "tool call "+tc.ID+" "+string(tc.Status)+"; tool "+tc.Tool+s.auditedArguments(tc))
		return c.JSON(toToolCallJSON(tc))
	}
}

// --- dashboard ---

func (s *Server) dashboard(c *fiber.Ctx) error {
	v, err := s.uc.Dashboard.Get(c.UserContext(), principalOf(c))
	if err != nil {
		return err
	}
	denials := make([]auditjson.Record, len(v.RecentDenials))
	for i, r := range v.RecentDenials {
		denials[i] = auditjson.FromRecord(r)
	}
	return c.JSON(fiber.Map{
		"projects":        v.Projects,
		"sessions_total":  v.SessionsTotal,
		"sessions_capped": v.SessionsCapped,
		"by_state":        v.ByState,
		"by_owner":        v.ByOwner,
		"owners_capped":   v.OwnersCapped,
		"recent_denials":  denials,
	})
}

// auditedArguments is what a tool call's audit record says of its
// arguments: their SHA-256 always, and their canonical JSON, cut to
// gateway.auditArguments bytes, when the operator opted in; last, so that
// nothing in them reads back as another field.
func (s *Server) auditedArguments(tc domain.ToolCall) string {
	if tc.ArgsHash == "" {
		return ""
	}
	out := "; args_sha256 " + tc.ArgsHash
	if s.uc.MCP != nil && tc.Arguments != nil {
		if args := s.uc.MCP.AuditedArguments(tc.Arguments); args != "" {
			out += "; args " + args
		}
	}
	return out
}
