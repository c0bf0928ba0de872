package console

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
)

// hostile is a value with markup in every text field: pages must show it
// as text.
const hostile = `<script>alert(1)</script>"'><img src=x>`

func testConsole(t testing.TB) *Console {
	t.Helper()
	authz, err := domain.NewAuthorizer(nil)
	if err != nil {
		t.Fatal(err)
	}
	admin := domain.Principal{Subject: hostile, Name: hostile, Roles: []domain.Role{domain.RoleAdmin}, Method: domain.MethodDebug, RoleSource: hostile}
	return New(app.Application{Authorizer: authz}, Env{Principal: func(*fiber.Ctx) domain.Principal { return admin }, RequestID: func(*fiber.Ctx) string { return hostile },
		BasePath: "/base"})
}

// pageData holds a representative value of each page's data, with markup
// in every caller-chosen text.
func pageData(rows int) map[string]any {
	now := time.Now()
	var sessions []domain.Session
	var records []domain.AuditRecord
	for i := range rows {
		sessions = append(sessions, domain.Session{ID: "ses_" + hostile, Owner: hostile, Project: hostile, Title: hostile, Mode: domain.ModeAsk, State: domain.SessionActive, CreatedAt: now})
		records = append(records, domain.AuditRecord{Seq: int64(i + 1), Time: now, Subject: hostile, Method: "GET", Path: "/api/v2/" + hostile, Decision: domain.AuditDeny,
			Reason: hostile, Status: 403, Roles: []domain.Role{domain.RoleUser}})
	}
	call := domain.ToolCall{ID: hostile, Session: hostile, Agent: hostile, Tool: hostile, Status: domain.CallPending, RequestedBy: hostile, CreatedAt: now}
	args, _ := json.Marshal(map[string]any{hostile: hostile, "long": strings.Repeat(hostile, 20), "n": []any{hostile, 1}})
	argued := call
	argued.Arguments, argued.ArgsHash, argued.Decision = args, hostile, domain.ToolDecision{Rule: hostile, Message: hostile, Reason: hostile}
	rule := domain.PolicyRule{ID: hostile, Effect: domain.EffectAllow, Tool: hostile, Scope: domain.ScopeRole, Value: hostile, CreatedBy: hostile}
	diff := app.ToolsDiff{Add: []domain.Tool{{Name: hostile, ReadOnly: true}}, Unchanged: []string{hostile}, Unlisted: []string{hostile}, Elsewhere: []string{hostile}, Invalid: []string{hostile}}
	return map[string]any{
		"server": serverData{ServerSetUp: app.ServerSetUp{Server: domain.Server{Name: hostile, URL: hostile, Endpoint: hostile, Credential: hostile},
			Tools: []domain.Tool{{Name: hostile, Server: hostile, Description: hostile}}}, Gateway: hostile, CanImport: true, Diff: &diff,
			Rules: []ruleRow{{Rule: rule, Applies: hostile, Tools: []string{hostile}}}, Targets: [][2]string{{hostile, hostile}}},
		"me":       meData{Method: domain.MethodDebug, RoleSource: hostile, Permissions: []permissionRow{{domain.PermMeRead, hostile}}},
		"sessions": sessionsData{sessions, hostile, []domain.Project{{ID: hostile, Name: hostile}}, map[string]string{hostile: hostile}},
		"session": sessionData{Session: sessions[0], ProjectName: hostile,
			Agents:    app.Page[domain.Agent]{Items: []domain.Agent{{ID: hostile, Name: hostile, Parent: hostile, CreatedBy: hostile, Session: hostile, Limits: domain.Limits{Tools: []string{hostile}}}}, Next: hostile},
			ToolCalls: app.Page[domain.ToolCall]{Items: []domain.ToolCall{call}, Next: hostile}, Servers: []domain.Server{{Name: hostile}},
			Minted: &app.Minted{Token: "tok", Grant: domain.AgentGrant{Audience: hostile, Chain: []string{hostile}, Tools: []string{hostile}}}},
		"approvals": []domain.Approval{{Call: argued, Session: sessions[0], Chain: []string{hostile, hostile}, ChainNames: []string{hostile},
			Names: map[string]string{hostile: hostile}, Tool: &domain.Tool{Name: hostile, Description: hostile, SecondApprover: true}},
			{Call: call, Session: sessions[0]}},
		"gateway": gatewayData{All: true, Subject: hostile, Next: hostile, Calls: []gatewayRow{{records[0],
			domain.GatewayCall{Method: hostile, Server: hostile, Chain: hostile, Tool: hostile, Decision: hostile, Reason: hostile, Upstream: 200}, []label{{hostile, hostile}, {"", hostile}}}}},
		"dashboard": dashboardData{DashboardView: app.DashboardView{Projects: []string{hostile}, RecentDenials: records}, ProjectNames: []string{hostile}, States: []stateCount{{hostile, 1}}},
		"projects":  app.Page[domain.Project]{Items: []domain.Project{{ID: hostile, Name: hostile, Members: []domain.Member{{Subject: hostile}}}}, Next: hostile},
		"project": struct {
			Project domain.Project
			Members string
		}{domain.Project{ID: hostile, Name: hostile, Members: []domain.Member{{Subject: hostile, Lead: true}}}, hostile},
		"settings": domain.Settings{SecurityGateway: true, DefaultSessionMode: domain.ModeAsk},
		"policies": policiesData{Rules: app.Page[domain.PolicyRule]{Items: []domain.PolicyRule{rule}, Next: hostile}, Rows: []ruleRow{{Rule: rule, Applies: hostile}},
			Roles: []domain.Role{domain.RoleUser}, Can: &canAnswer{Role: hostile, Action: hostile, Resource: hostile, Answer: hostile},
			Use: []domain.QuotaUse{{Key: hostile, Calls: 3, Start: now, End: now}},
			Sim: &simAnswer{Tool: hostile, Args: hostile, Roles: hostile, Subject: hostile, Project: hostile, Mode: hostile,
				Decision: domain.ToolDecision{Effect: domain.EffectDeny, Reason: hostile, Message: hostile},
				Steps:    []domain.RuleStep{{Rule: domain.PolicyRule{ID: hostile, Tool: hostile, Value: hostile, When: hostile}, Result: hostile, Error: hostile}}}},
		"catalog": struct {
			Servers app.Page[domain.Server]
			Tools   app.Page[domain.Tool]
		}{app.Page[domain.Server]{Items: []domain.Server{{Name: hostile, URL: hostile}}, Next: hostile}, app.Page[domain.Tool]{Items: []domain.Tool{{Name: hostile, Server: hostile, Pin: domain.ToolPin{Digest: hostile, ChangedDigest: hostile}}}, Next: hostile}},
		"definition": definitionData{Tool: domain.Tool{Name: hostile, Server: hostile, Pin: domain.ToolPin{Definition: hostile, Digest: hostile, Changed: hostile, ChangedDigest: hostile, ChangedAt: now}},
			Pinned: hostile, Changed: hostile},
		"roles":  []roleRow{{Name: domain.Role(hostile), Permissions: []domain.Permission{domain.Permission(hostile)}}},
		"audit":  auditData{Subject: hostile, Decision: hostile, Since: hostile, Until: hostile, Records: records, Next: hostile, CanExport: true},
		"record": records[0],
		"verify": verifyData{Step: app.VerifyStep{ChainReport: domain.ChainReport{Breaks: []domain.ChainBreak{{Kind: domain.BreakKind(hostile)}}, BreakCount: 1}, Next: 5},
			Checkpoints: []domain.AuditCheckpoint{{Seq: 1, KeyID: hostile, Hash: hostile}}},
		"keys": keysData{Next: hostile, Keys: []keyRow{{domain.APIKey{ID: hostile, Name: hostile, Owner: hostile, Projects: []string{hostile}, Tools: []string{hostile},
			Permissions: []domain.Permission{domain.Permission(hostile)}, ExpiresAt: now}, hostile}},
			Grantable: []domain.Permission{domain.Permission(hostile)}, Made: &app.NewKey{Key: domain.APIKey{Name: hostile, Owner: hostile}, Secret: hostile}},
		"connections": connectionsData{Connected: hostile, Next: hostile,
			Servers: []serverRow{{Name: hostile, Issuer: hostile, Scopes: []string{hostile}},
				{Name: "javascript:alert(1)", Scopes: []string{hostile}, Conn: &domain.Connection{Subject: hostile, Server: hostile, UpstreamSubject: hostile,
					Scopes: []string{hostile}, Status: domain.ConnectionBroken, Broken: hostile, CreatedAt: now}}},
			Everyone: []domain.Connection{{Subject: hostile, Server: hostile, UpstreamSubject: hostile, Status: domain.ConnectionActive, CreatedAt: now}}},
		"problem": Problem{Status: 403, Title: hostile, Message: hostile, Missing: domain.Permission(hostile), RequestID: hostile},
		"signin":  SignIn{ReturnTo: hostile, ProviderURL: "javascript:alert(1)", ProviderName: hostile, Password: true, Key: true, Error: hostile, Notice: hostile, RequestID: hostile},
	}
}

func renderPage(t testing.TB, c *Console, name string, data any) (int, string, pageHeaders) {
	t.Helper()
	a := fiber.New()
	a.Get("/", func(ctx *fiber.Ctx) error {
		if name == "signin" {
			return c.WriteSignIn(ctx, 401, data.(SignIn))
		}
		return c.renderNamed(ctx, 200, name, hostile, data, names{People: map[string]string{hostile: hostile}, Agents: map[string]string{hostile: hostile}})
	})
	res, err := a.Test(httptest.NewRequest("GET", "/?done="+strings.ReplaceAll(hostile, " ", "%20"), nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), pageHeaders{res.Header.Get("Content-Security-Policy"), res.Header.Get("X-Frame-Options")}
}

type pageHeaders struct{ csp, frame string }

// TestEveryPageRendersEscaped renders every template with markup in every
// text it shows (the names of people and agents too): each renders, nothing is unescaped, a javascript: URL is
// neutralised, and the answer carries the CSP and refuses framing.
func TestEveryPageRendersEscaped(t *testing.T) {
	c := testConsole(t)
	data := pageData(3)
	for name := range c.pages {
		t.Run(name, func(t *testing.T) {
			d, ok := data[name]
			if !ok {
				t.Fatalf("no test data for page %s; add it to pageData", name)
			}
			status, body, h := renderPage(t, c, name, d)
			if status != 200 && status != 401 {
				t.Fatalf("status %d: %s", status, body)
			}
			for _, bad := range []string{"<script>", "<img src=x>", `href="javascript:`} {
				if strings.Contains(body, bad) {
					t.Errorf("page holds %q unescaped", bad)
				}
			}
			if got, want := h.csp, CSP; got != want {
				t.Errorf("CSP %q, want %q", got, want)
			}
			if !strings.Contains(h.csp, "frame-ancestors 'none'") || strings.Contains(h.csp, "unsafe") || h.frame != "DENY" {
				t.Errorf("CSP %q, X-Frame-Options %q: want frames refused and nothing unsafe", h.csp, h.frame)
			}
		})
	}
}

// BenchmarkAuditPage50 is the server time of the heaviest list page (50
// audit records) spent in this package: building and writing the HTML.
func BenchmarkAuditPage50(b *testing.B) {
	c := testConsole(b)
	now := time.Now()
	d := auditData{CanExport: true, Next: "1234"}
	for i := range 50 {
		d.Records = append(d.Records, domain.AuditRecord{Seq: int64(1000 + i), Time: now, Subject: "debug-admin", Method: "GET",
			Path: "/api/v2/sessions/ses_5218f38f860e1b114204ab4a02f3a218", Decision: domain.AuditAllow, Status: 200})
	}
	a := fiber.New()
	a.Get("/", func(ctx *fiber.Ctx) error { return c.render(ctx, 200, "audit", "Audit log", d) })
	h := a.Handler()
	b.ReportAllocs()
	for b.Loop() {
		var fc fasthttp.RequestCtx
		fc.Request.SetRequestURI("/")
		h(&fc)
		if fc.Response.StatusCode() != 200 {
			b.Fatal(fc.Response.StatusCode())
		}
		b.SetBytes(int64(len(fc.Response.Body())))
	}
}
