package rest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports/porttest"
)

// axFixture is a set of resources owned (or led) by one caller, so that a
// call its role allows is not refused for resource-level reasons.
type axFixture struct {
	project, session, agent, call, policy, tool, key string
}

func (h *axHarness) seed(t *testing.T, subject string, n int, catalog bool) axFixture {
	t.Helper()
	ctx := porttest.Context(t)
	now := time.Now().UTC()
	f := axFixture{
		project: fmt.Sprintf("prj_%d", n), session: fmt.Sprintf("ses_%d", n), agent: fmt.Sprintf("agt_%d", n),
		call: fmt.Sprintf("call_%d", n), policy: fmt.Sprintf("pol_%d", n), tool: fmt.Sprintf("tool.%d", n),
		key: axKeyID(n),
	}
	var role domain.Role
	for _, c := range axCallers {
		if c.subject == subject {
			role = c.role
		}
	}
	server := fmt.Sprintf("srv-%d", n)
	steps := []error{
		h.store.CreateProject(ctx, domain.Project{ID: f.project, Name: "P", CreatedBy: subject, CreatedAt: now, Members: []domain.Member{{Subject: subject, Lead: true}}}),
		h.store.CreateSession(ctx, domain.Session{ID: f.session, Owner: subject, Project: f.project, Mode: domain.ModeAuto, State: domain.SessionActive, CreatedAt: now}),
		h.store.CreateAgent(ctx, domain.Agent{ID: f.agent, Session: f.session, CreatedBy: subject, CreatedAt: now}),
		h.store.CreateToolCall(ctx, domain.ToolCall{ID: f.call, Session: f.session, Agent: f.agent, Tool: f.tool, Status: domain.CallPending,
			Decision: domain.ToolDecision{Effect: domain.EffectAsk, Reason: domain.ReasonModeAsk, Message: "m"}, RequestedBy: subject, CreatedAt: now}),
		h.store.CreateServer(ctx, domain.Server{Name: server, URL: "http://127.0.0.1:1/mcp", CreatedAt: now}),
		h.store.CreateTool(ctx, domain.Tool{Name: f.tool, Server: server, CreatedAt: now}),
		h.store.CreatePolicy(ctx, domain.PolicyRule{ID: f.policy, Effect: domain.EffectAllow, Tool: "*", Scope: domain.ScopeSubject, Value: subject, CreatedAt: now}),
		h.store.PutKeyOwner(ctx, domain.KeyOwner{Subject: subject, Roles: []domain.Role{role}, UpdatedAt: now}),
		h.store.CreateAPIKey(ctx, domain.APIKey{ID: f.key, Name: "k", Owner: subject, Hash: make([]byte, 32), Permissions: []domain.Permission{domain.PermMeRead},
			CreatedBy: subject, CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Minute)}, 1000, now), // expired: not counted against the limit
	}
	if catalog {
		// For the routes that change or remove a server or a tool: a
		// server and a tool no call waits for (their changes are refused
		// while one does), and a server without tools (removable); for
		// those of a connection, one.
		steps = append(steps,
			h.store.CreateServer(ctx, domain.Server{Name: fmt.Sprintf("free-%d", n), URL: "http://127.0.0.1:1/mcp", CreatedAt: now}),
			h.store.CreateTool(ctx, domain.Tool{Name: fmt.Sprintf("free.%d", n), Server: fmt.Sprintf("free-%d", n), CreatedAt: now}),
			h.store.CreateServer(ctx, domain.Server{Name: fmt.Sprintf("bare-%d", n), URL: "http://127.0.0.1:1/mcp", CreatedAt: now}),
			// A server people connect to, and the caller's connection to it.
			h.store.CreateServer(ctx, domain.Server{Name: fmt.Sprintf("conn-%d", n), URL: "http://127.0.0.1:1/mcp", Endpoint: "http://127.0.0.1:1/mcp",
				UpstreamAuth: &domain.UpstreamAuth{Type: domain.UpstreamOAuth2, Issuer: "https://as.example/", ClientID: "agentauth"}, CreatedAt: now}),
			h.store.PutConnection(ctx, domain.Connection{ID: fmt.Sprintf("conn_%d", n), Subject: subject, Server: fmt.Sprintf("conn-%d", n),
				Issuer: "https://as.example/", ClientID: "agentauth", Status: domain.ConnectionActive, CreatedAt: now, Version: 1}))
	}
	for _, err := range steps {
		if err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	return f
}

// axKeyID is a well-formed managed-key id made from n.
func axKeyID(n int) string {
	id := []byte("aaaaaaaaaaaa")
	for i := len(id) - 1; n > 0; i-- {
		id[i] = "abcdefghijklmnopqrstuvwxyz234567"[n%32]
		n /= 32
	}
	return string(id)
}

// axRequest fills a route's path parameters from the fixture and gives a
// valid body for every route that takes one. A route without a body here
// makes the test fail, so a new endpoint cannot skip the matrix.
func axRequest(r route, subject string, f axFixture, n int) (path, body string, ok bool) {
	path = strings.NewReplacer(":id", map[bool]string{true: f.project, false: f.session}[strings.Contains(r.path, "/projects/")], ":call", f.call, ":agent", f.agent,
		":seq", "1").Replace(r.path)
	if strings.Contains(r.path, "/policies/") {
		path = strings.Replace(r.path, ":id", f.policy, 1)
	}
	if strings.HasPrefix(r.path, "/api/v2/keys/") || strings.HasPrefix(r.path, "/console/keys/") {
		path = strings.Replace(r.path, ":id", f.key, 1)
	}
	path = strings.Replace(path, ":subject", subject, 1)
	if r.path == "/api/v2/policies/simulate" {
		path += "?tool=" + f.tool + "&role=USER&args=%7B%7D"
	}
	switch {
	case r.path == "/api/v2/servers/:name" && r.method == fiber.MethodDelete, r.path == "/console/catalog/servers/:name/delete":
		path = strings.Replace(path, ":name", fmt.Sprintf("bare-%d", n), 1)
	case strings.HasPrefix(r.path, "/connect/") || strings.HasPrefix(r.path, "/api/v2/connections/") || strings.HasPrefix(r.path, "/console/connections/"):
		path = strings.Replace(path, ":name", fmt.Sprintf("conn-%d", n), 1)
	case strings.Contains(r.path, "/servers/:name"):
		path = strings.Replace(path, ":name", fmt.Sprintf("free-%d", n), 1)
	case strings.Contains(r.path, "/tools/:name"):
		path = strings.Replace(path, ":name", fmt.Sprintf("free.%d", n), 1)
	}
	bodies := map[string]string{
		"POST /api/v2/sessions":                              `{"title":"t","project":"` + f.project + `"}`,
		"PATCH /api/v2/sessions/:id":                         `{"mode":"readonly"}`,
		"POST /api/v2/projects":                              `{"name":"new"}`,
		"PUT /api/v2/projects/:id/members":                   `{"members":[{"subject":"` + subject + `","lead":true},{"subject":"bob"}]}`,
		"POST /api/v2/servers":                               fmt.Sprintf(`{"name":"new-%d","url":"https://127.0.0.1/mcp"}`, n),
		"POST /api/v2/tools":                                 fmt.Sprintf(`{"name":"new.%d","server":"srv-%d","read_only":true}`, n, n),
		"PUT /api/v2/servers/:name":                          `{"url":"https://127.0.0.1/mcp"}`,
		"PATCH /api/v2/servers/:name":                        `{"endpoint":"https://127.0.0.1/mcp"}`,
		"PUT /api/v2/tools/:name":                            fmt.Sprintf(`{"server":"free-%d","read_only":true}`, n),
		"PATCH /api/v2/tools/:name":                          `{"description":"changed"}`,
		"POST /api/v2/tools/:name/definition/accept":         `{"sha256":""}`,
		"POST /api/v2/policies":                              `{"effect":"deny","tool":"shell.*","scope":"role","value":"USER"}`,
		"POST /api/v2/sessions/:id/agents":                   `{"parent":"` + f.agent + `","tools":["` + f.tool + `"]}`,
		"POST /api/v2/sessions/:id/tool-calls":               `{"agent":"` + f.agent + `","tool":"` + f.tool + `"}`,
		"PUT /api/v2/admin/settings":                         `{"security_gateway":true,"default_session_mode":"auto"}`,
		"POST /api/v2/sessions/:id/agents/:agent/token":      fmt.Sprintf(`{"audience":"srv-%d"}`, n),
		"POST /api/v2/sessions/:id/tool-calls/:call/approve": "",
		"POST /oauth2/introspect":                            `token=not-a-token`,
		"POST /api/v2/sessions/:id/tool-calls/:call/reject":  "",

		"POST /console/sessions":                              "title=t&project=" + f.project,
		"POST /console/sessions/:id/close":                    "",
		"POST /console/sessions/:id/mode":                     "mode=readonly",
		"POST /console/sessions/:id/agents":                   "parent=" + f.agent + "&tools=" + f.tool,
		"POST /console/sessions/:id/tokens":                   fmt.Sprintf("agent=%s&audience=srv-%d", f.agent, n),
		"POST /console/sessions/:id/tool-calls/:call/approve": "",
		"POST /console/sessions/:id/tool-calls/:call/reject":  "",
		"POST /console/projects":                              "name=new",
		"POST /console/projects/:id/members":                  "members=lead:" + subject + "%0Abob",
		"POST /console/settings":                              "security_gateway=on&default_session_mode=auto",
		"POST /console/policies":                              "effect=deny&tool=shell.*&scope=role&value=USER",
		"POST /console/policies/:id/delete":                   "",
		"POST /console/catalog/servers":                       fmt.Sprintf("name=new-%d&url=https://127.0.0.1/mcp", n),
		"POST /console/catalog/tools":                         fmt.Sprintf("name=new.%d&server=srv-%d&read_only=on", n, n),
		"POST /console/catalog/servers/:name":                 "url=https://127.0.0.1/mcp&endpoint=&credential=",
		"POST /console/catalog/servers/:name/delete":          "",
		"POST /console/catalog/tools/:name":                   fmt.Sprintf("server=free-%d&description=d", n),
		"POST /console/catalog/tools/:name/delete":            "",
		"POST /console/connections/:name/delete":              "",
		"POST /console/catalog/tools/:name/definition/accept": "sha256=",

		"POST /api/v2/keys":               `{"name":"ci","permissions":["me:read"],"expires_at":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}`,
		"POST /console/keys":              "name=ci&days=1&permissions=me:read",
		"POST /console/keys/:id/revoke":   "",
		"POST /api/v2/service-accounts":   fmt.Sprintf(`{"name":"svc-%d","role":"USER"}`, n),
		"PUT /api/v2/key-owners/:subject": `{"disabled":false}`,
	}
	body, ok = bodies[r.method+" "+r.path]
	if !ok && (r.method == fiber.MethodGet || r.method == fiber.MethodDelete) {
		ok = true
	}
	return path, body, ok
}

// TestEveryRoleTimesEveryEndpoint walks the route table (the same data the
// server registers) for the four built-in roles and a custom one. A role
// whose permissions include the route's gets 200/201/204 on its own
// resources; any other gets 403 naming the missing permission, and the
// refused call changes nothing.
func TestEveryRoleTimesEveryEndpoint(t *testing.T) {
	h := axNew(t)
	routes := h.srv.apiRoutes()
	if len(routes) < 25 {
		t.Fatalf("route table has %d routes; the access routes are missing", len(routes))
	}
	n, granted, refused := 0, 0, 0
	defer func() { t.Logf("%d routes × 5 roles: %d allowed, %d refused", len(routes), granted, refused) }()
	for _, r := range routes {
		for _, c := range axCallers[:5] {
			n++
			name := fmt.Sprintf("%s %s as %s", r.method, r.path, c.role)
			f := h.seed(t, c.subject, n, strings.Contains(r.path, "/:name"))
			path, body, ok := axRequest(r, c.subject, f, n)
			if !ok {
				t.Errorf("%s: no request body known for this route; add one to axRequest", name)
				continue
			}
			allowed := h.authz.Decide([]domain.Role{c.role}, r.need).Allowed
			before := ""
			if allowed {
				granted++
			} else {
				refused++
				before = h.snapshot(t)
			}
			res := h.do(t, c.subject, r.method, path, body)
			oauth := strings.HasPrefix(r.path, oauthPrefix)
			if oauth { // a form body; RFC 6749 §5.2 errors
				res, _ = h.post(t, c.subject, path, formType, body)
			}
			// The browser's connect flow answers otherwise once allowed: a
			// redirect to the authorization server, and a callback without
			// the state it must bring.
			switch r.path {
			case "/connect/:name":
				if allowed && res.status == 302 {
					res.status = 200
				}
			case "/connect/:name/callback":
				if allowed && res.status == 400 && strings.Contains(string(res.body), "without state") {
					res.status = 200
				}
			}
			switch {
			case allowed && res.status != 200 && res.status != 201 && res.status != 204:
				t.Errorf("%s: got %d %s, want 200/201/204 (the role grants %s)", name, res.status, res.body, r.need)
			case !allowed && res.status != 403:
				t.Errorf("%s: got %d %s, want 403 (the role lacks %s)", name, res.status, res.body, r.need)
			case !allowed:
				e := res.errorOf(t)
				if oauth && (e.Code != oauthUnauthorizedClient || e.ReasonCode != domain.ReasonRoleLacksPermission || !strings.Contains(e.Message, string(r.need))) ||
					!oauth && (e.ReasonCode != domain.ReasonRoleLacksPermission || e.Missing != string(r.need) || !strings.Contains(e.Reason, string(r.need))) {
					t.Errorf("%s: error %+v, want reason_code %s and missing %s", name, e, domain.ReasonRoleLacksPermission, r.need)
				}
				if after := h.snapshot(t); after != before {
					t.Errorf("%s: a refused call changed the data:\nbefore:\n%s\nafter:\n%s", name, before, after)
				}
			}
		}
	}
}

// TestRoutePermissionsArePinned pins the permission of every route to the
// one the README documents. The matrix test above takes its expectation
// from the route table itself, so a route whose permission is weakened
// (DELETE /api/v2/policies/:id needing policies:read, say, which would let
// AUDITOR delete rules) would still pass it; this table would not. It also
// checks that AUDITOR, which writes nothing, is refused every non-GET route.
func TestRoutePermissionsArePinned(t *testing.T) {
	want := map[string]domain.Permission{
		"GET /api/v2/me":                                      domain.PermMeRead,
		"GET /api/v2/sessions":                                domain.PermSessionsRead,
		"POST /api/v2/sessions":                               domain.PermSessionsWrite,
		"GET /api/v2/sessions/:id":                            domain.PermSessionsRead,
		"DELETE /api/v2/sessions/:id":                         domain.PermSessionsWrite,
		"PATCH /api/v2/sessions/:id":                          domain.PermSessionsWrite,
		"GET /api/v2/audit":                                   domain.PermAuditRead,
		"GET /api/v2/audit/export":                            domain.PermAuditExport,
		"GET /api/v2/audit/verify":                            domain.PermAuditRead,
		"GET /api/v2/audit/checkpoints":                       domain.PermAuditRead,
		"GET /api/v2/admin/settings":                          domain.PermSettingsRead,
		"PUT /api/v2/admin/settings":                          domain.PermSettingsWrite,
		"GET /api/v2/projects":                                domain.PermProjectsRead,
		"POST /api/v2/projects":                               domain.PermProjectsCreate,
		"GET /api/v2/projects/:id":                            domain.PermProjectsRead,
		"GET /api/v2/projects/:id/members":                    domain.PermProjectsRead,
		"PUT /api/v2/projects/:id/members":                    domain.PermProjectsWrite,
		"GET /api/v2/servers":                                 domain.PermServersRead,
		"POST /api/v2/servers":                                domain.PermServersWrite,
		"PUT /api/v2/servers/:name":                           domain.PermServersWrite,
		"PATCH /api/v2/servers/:name":                         domain.PermServersWrite,
		"DELETE /api/v2/servers/:name":                        domain.PermServersWrite,
		"GET /api/v2/tools":                                   domain.PermToolsRead,
		"POST /api/v2/tools":                                  domain.PermToolsWrite,
		"PUT /api/v2/tools/:name":                             domain.PermToolsWrite,
		"PATCH /api/v2/tools/:name":                           domain.PermToolsWrite,
		"DELETE /api/v2/tools/:name":                          domain.PermToolsWrite,
		"GET /api/v2/tools/:name/definition":                  domain.PermToolsRead,
		"POST /api/v2/tools/:name/definition/accept":          domain.PermToolsWrite,
		"GET /api/v2/policies":                                domain.PermPoliciesRead,
		"POST /api/v2/policies":                               domain.PermPoliciesWrite,
		"DELETE /api/v2/policies/:id":                         domain.PermPoliciesWrite,
		"GET /api/v2/policies/simulate":                       domain.PermPoliciesRead,
		"GET /api/v2/sessions/:id/agents":                     domain.PermSessionsRead,
		"POST /api/v2/sessions/:id/agents":                    domain.PermAgentsWrite,
		"GET /api/v2/sessions/:id/tool-calls":                 domain.PermSessionsRead,
		"POST /api/v2/sessions/:id/tool-calls":                domain.PermToolCallsWrite,
		"POST /api/v2/sessions/:id/tool-calls/:call/approve":  domain.PermToolCallsApprove,
		"POST /api/v2/sessions/:id/tool-calls/:call/reject":   domain.PermToolCallsApprove,
		"GET /api/v2/dashboard":                               domain.PermDashboardRead,
		"GET /metrics":                                        domain.PermMetricsRead,
		"POST /api/v2/sessions/:id/agents/:agent/token":       domain.PermAgentsToken,
		"GET /.well-known/jwks.json":                          domain.PermMeRead,
		"POST /oauth2/introspect":                             domain.PermTokensIntrospect,
		"GET /":                                               domain.PermMeRead,
		"GET /console":                                        domain.PermMeRead,
		"GET /console/":                                       domain.PermMeRead,
		"GET /console/sessions":                               domain.PermSessionsRead,
		"POST /console/sessions":                              domain.PermSessionsWrite,
		"GET /console/sessions/:id":                           domain.PermSessionsRead,
		"POST /console/sessions/:id/close":                    domain.PermSessionsWrite,
		"POST /console/sessions/:id/mode":                     domain.PermSessionsWrite,
		"POST /console/sessions/:id/agents":                   domain.PermAgentsWrite,
		"POST /console/sessions/:id/tokens":                   domain.PermAgentsToken,
		"POST /console/sessions/:id/tool-calls/:call/approve": domain.PermToolCallsApprove,
		"POST /console/sessions/:id/tool-calls/:call/reject":  domain.PermToolCallsApprove,
		"GET /console/approvals":                              domain.PermToolCallsApprove,
		"GET /console/gateway":                                domain.PermSessionsRead,
		"GET /console/dashboard":                              domain.PermDashboardRead,
		"GET /console/projects":                               domain.PermProjectsRead,
		"POST /console/projects":                              domain.PermProjectsCreate,
		"GET /console/projects/:id":                           domain.PermProjectsRead,
		"POST /console/projects/:id/members":                  domain.PermProjectsWrite,
		"GET /console/settings":                               domain.PermSettingsRead,
		"POST /console/settings":                              domain.PermSettingsWrite,
		"GET /console/policies":                               domain.PermPoliciesRead,
		"POST /console/policies":                              domain.PermPoliciesWrite,
		"POST /console/policies/:id/delete":                   domain.PermPoliciesWrite,
		"GET /console/catalog":                                domain.PermServersRead,
		"GET /console/catalog/servers/:name":                  domain.PermServersRead,
		"POST /console/catalog/servers":                       domain.PermServersWrite,
		"POST /console/catalog/tools":                         domain.PermToolsWrite,
		"POST /console/catalog/servers/:name":                 domain.PermServersWrite,
		"POST /console/catalog/servers/:name/delete":          domain.PermServersWrite,
		"POST /console/catalog/tools/:name":                   domain.PermToolsWrite,
		"POST /console/catalog/tools/:name/delete":            domain.PermToolsWrite,
		"GET /console/catalog/tools/:name/definition":         domain.PermToolsRead,
		"POST /console/catalog/tools/:name/definition/accept": domain.PermToolsWrite,
		"GET /console/roles":                                  domain.PermSettingsRead,
		"GET /console/audit":                                  domain.PermAuditRead,
		"GET /console/audit/verify":                           domain.PermAuditRead,
		"GET /console/audit/:seq":                             domain.PermAuditRead,
		"GET /console/keys":                                   domain.PermKeysRead,
		"POST /console/keys":                                  domain.PermKeysWrite,
		"POST /console/keys/:id/revoke":                       domain.PermKeysWrite,
		"GET /api/v2/keys":                                    domain.PermKeysRead,
		"POST /api/v2/keys":                                   domain.PermKeysWrite,
		"DELETE /api/v2/keys/:id":                             domain.PermKeysWrite,
		"GET /api/v2/service-accounts":                        domain.PermKeysManage,
		"POST /api/v2/service-accounts":                       domain.PermKeysManage,
		"PUT /api/v2/key-owners/:subject":                     domain.PermKeysManage,
		"GET /connect/:name":                                  domain.PermConnectionsWrite,
		"GET /connect/:name/callback":                         domain.PermConnectionsWrite,
		"GET /api/v2/connections":                             domain.PermConnectionsRead,
		"GET /console/connections":                            domain.PermConnectionsRead,
		"POST /console/connections/:name/delete":              domain.PermConnectionsWrite,
		"DELETE /api/v2/connections/:name":                    domain.PermConnectionsWrite,
	}
	h := axNew(t)
	seen := map[string]bool{}
	for _, r := range h.srv.apiRoutes() {
		key := r.method + " " + r.path
		seen[key] = true
		need, ok := want[key]
		switch {
		case !ok:
			t.Errorf("%s: not pinned; add the permission the README documents to this table", key)
		case r.need != need:
			t.Errorf("%s needs %s, want %s", key, r.need, need)
		}
		if r.method != fiber.MethodGet && h.authz.Decide([]domain.Role{domain.RoleAuditor}, r.need).Allowed {
			t.Errorf("%s: AUDITOR is granted %s; AUDITOR writes nothing", key, r.need)
		}
	}
	for key := range want {
		if !seen[key] {
			t.Errorf("%s: pinned but not served", key)
		}
	}
}
