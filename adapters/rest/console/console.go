// Package console is the web console: server-rendered pages for people,
// on the API port, beside the JSON API. Every page and form is a route of
// the API's chain (authentication, the route's permission, the audit
// record) and calls the same use cases as the JSON endpoints; this package
// only turns their answers into HTML and form posts into their inputs.
//
// Why this technology: html/template escapes every value by context, the
// templates and the one style sheet are embedded in the binary (no build
// step, no Node.js at run time), and the pages need no script at all:
// forms post and the server answers with a redirect (POST-redirect-GET),
// so the Content-Security-Policy allows no script whatever.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"html/template"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

//go:embed templates/*.html templates/style.css
var files embed.FS

// style is the one style sheet, inlined in every page and allowed by its
// hash: a page is one request, and the sign-in page (the body of a 401)
// loads nothing else.
var style = func() string {
	b, err := files.ReadFile("templates/style.css")
	if err != nil {
		panic(err)
	}
	return strings.TrimSpace(string(b))
}()

// CSP allows the inline style sheet and nothing else: no script, no
// frame, forms posted to this origin only; the one image is the empty
// icon (a data: URL) that spares the browser asking for /favicon.ico.
var CSP = func() string {
	sum := sha256.Sum256([]byte(style))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
}()

// Env is what the console needs from the HTTP edge it is served by.
type Env struct {
	// Principal is the authenticated caller of a request.
	Principal func(*fiber.Ctx) domain.Principal
	// RequestID is the request's id, shown on error pages.
	RequestID func(*fiber.Ctx) string
	// BasePath prefixes every link (server.basePath).
	BasePath string
	// Note adds to a request's audit record what the request did (nil:
	// nothing is added).
	Note func(*fiber.Ctx, string)
}

// Console renders the pages.
type Console struct {
	uc    app.Application
	env   Env
	pages map[string]*template.Template
	bufs  sync.Pool
}

// New parses the templates; a template that does not parse is a bug of
// the build and panics at start.
func New(uc app.Application, env Env) *Console {
	c := &Console{uc: uc, env: env, pages: map[string]*template.Template{}, bufs: sync.Pool{New: func() any { return new(bytes.Buffer) }}}
	funcs := template.FuncMap{
		"path": func(p string) string { return env.BasePath + p },
		"time": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05Z")
		},
		"join": func(s []string) string { return strings.Join(s, ", ") },
		// arguments and sha: a call's arguments as the Approvals page
		// shows them, member by member.
		"arguments": arguments,
		// pathEscape makes a name (a tool's may hold "/") one path segment.
		"pathEscape": url.PathEscape,
		// memberCount counts the members a page of projects carries of a
		// project: ports.EmbeddedMembers+1 of them means more.
		"memberCount": func(m []domain.Member) string {
			if len(m) > ports.EmbeddedMembers {
				return strconv.Itoa(ports.EmbeddedMembers) + "+"
			}
			return strconv.Itoa(len(m))
		},
		"roles": func(r []domain.Role) string { return domain.JoinRoles(r) },
		// who and named label an id (a subject, an agent's id) with its
		// name, for the "who" template: from a page's names, or given.
		"who":   func(names map[string]string, id string) label { return label{Name: names[id], ID: id} },
		"named": func(name, id string) label { return label{Name: name, ID: id} },
		// nameAt is names[i], "" past its end (an approval's ChainNames).
		"nameAt": func(names []string, i int) string {
			if i < len(names) {
				return names[i]
			}
			return ""
		},
		// query is a link's query string; typed as a URL, since as a
		// string html/template escapes it whole after a "?" (its "=" and
		// "&" too, which made every "next" link lose its cursor). Encode
		// escapes every value, so the URL is safe as it is.
		"query": func(kv ...string) template.URL {
			v := url.Values{}
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i+1] != "" {
					v.Set(kv[i], kv[i+1])
				}
			}
			return template.URL(v.Encode())
		},
	}
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html"))
	names, err := files.ReadDir("templates")
	if err != nil {
		panic(err)
	}
	for _, e := range names {
		n := e.Name()
		if n == "layout.html" || !strings.HasSuffix(n, ".html") {
			continue
		}
		c.pages[strings.TrimSuffix(n, ".html")] = template.Must(template.Must(layout.Clone()).ParseFS(files, "templates/"+n))
	}
	return c
}

// section is one entry of the navigation: shown to a role that holds its
// permission; its URL answers 403 to the others.
type section struct {
	Path, Title string
	Need        domain.Permission
	// served, when set, says whether the use case behind it is (the managed
	// keys are not in hybrid mode).
	served func(app.Application) bool
}

// sections lists the navigation in order.
var sections = []section{
	{"/console/", "Who am I", domain.PermMeRead, nil},
	{"/console/sessions", "Sessions", domain.PermSessionsRead, nil},
	{"/console/approvals", "Approvals", domain.PermToolCallsApprove, nil},
	{"/console/gateway", "Gateway calls", domain.PermSessionsRead, nil},
	{"/console/dashboard", "Dashboard", domain.PermDashboardRead, nil},
	{"/console/projects", "Projects", domain.PermProjectsRead, nil},
	{"/console/settings", "Settings", domain.PermSettingsRead, nil},
	{"/console/policies", "Policies", domain.PermPoliciesRead, nil},
	{"/console/catalog", "Servers & tools", domain.PermServersRead, nil},
	{"/console/roles", "Roles", domain.PermSettingsRead, nil},
	{"/console/keys", "API keys", domain.PermKeysRead, func(a app.Application) bool { return a.Keys != nil }},
	{"/console/connections", "Connections", domain.PermConnectionsRead, func(a app.Application) bool { return a.Connections != nil }},
	{"/console/audit", "Audit log", domain.PermAuditRead, nil},
}

// view is what every page template gets.
type view struct {
	Title     string
	Style     template.CSS
	Nav       []section
	Current   string
	Principal domain.Principal
	// Can holds the permissions of the caller, for the actions a page offers.
	Can map[string]bool
	// Flash is the outcome of the action just done (from ?done=).
	Flash string
	Data  any
	// Names label the people and agents the page shows (renderNamed).
	Names names
}

// names are the labels of the people (by subject) and agents (by id) a page
// shows: text people chose, escaped like any value, always shown beside
// the id it labels (the "who" template), never in its place.
type names struct{ People, Agents map[string]string }

// label is an id and its name ("" for none), as the "who" template shows it.
type label struct{ Name, ID string }

// names looks up the names of people and agents (app.Names).
func (c *Console) names(ctx *fiber.Ctx, people, agents []string) (names, error) {
	var n names
	var err error
	n.People, n.Agents, err = c.uc.Names.Lookup(ctx.UserContext(), people, agents)
	return n, err
}

// render writes the page name with data as a 200 (or status).
func (c *Console) render(ctx *fiber.Ctx, status int, name, title string, data any) error {
	return c.renderNamed(ctx, status, name, title, data, names{})
}

// renderNamed writes the page name with data, and the names of the people
// and agents it shows.
func (c *Console) renderNamed(ctx *fiber.Ctx, status int, name, title string, data any, n names) error {
	p := c.env.Principal(ctx)
	v := view{Title: title, Style: template.CSS(style), Current: ctx.Path(), Principal: p, Data: data,
		Can: map[string]bool{}, Flash: ctx.Query("done"), Names: n}
	if len(p.Roles) > 0 {
		for _, perm := range c.uc.Authorizer.PermissionsFor(p) {
			v.Can[string(perm)] = true
		}
		for _, s := range sections {
			if v.Can[string(s.Need)] && (s.served == nil || s.served(c.uc)) {
				v.Nav = append(v.Nav, s)
			}
		}
	}
	return c.write(ctx, status, name, v)
}

func (c *Console) write(ctx *fiber.Ctx, status int, name string, v view) error {
	b := c.bufs.Get().(*bytes.Buffer)
	defer c.bufs.Put(b)
	b.Reset()
	if err := c.pages[name].ExecuteTemplate(b, "layout.html", v); err != nil {
		return err
	}
	ctx.Set(fiber.HeaderContentSecurityPolicy, CSP)
	ctx.Set(fiber.HeaderXFrameOptions, "DENY")
	ctx.Set(fiber.HeaderReferrerPolicy, "same-origin")
	ctx.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return ctx.Status(status).Send(b.Bytes())
}

// SignIn is what the sign-in page offers.
type SignIn struct {
	// ReturnTo is where a successful sign-in goes (a path of this site).
	ReturnTo string
	// ProviderURL starts a code-flow login ("" outside OIDC mode);
	// ProviderName names the provider on its button.
	ProviderURL, ProviderName string
	// Password offers the username and password form; Key the API-key form.
	Password, Key bool
	// DebugKeys names the built-in keys (debug mode only).
	DebugKeys bool
	// Error is what went wrong with the last attempt, in plain words.
	Error string
	// Notice is a neutral message (signed out).
	Notice    string
	RequestID string
	Status    int
}

// WriteSignIn answers the sign-in page with status (a 401 for anyone
// without a session).
func (c *Console) WriteSignIn(ctx *fiber.Ctx, status int, s SignIn) error {
	s.Status = status
	return c.write(ctx, status, "signin", view{Title: "Sign in", Style: template.CSS(style), Data: s})
}

// Problem is an error page: what happened and the request id.
type Problem struct {
	Status    int
	Title     string
	Message   string
	Missing   domain.Permission
	RequestID string
}

// WriteProblem answers an error page for a console URL.
func (c *Console) WriteProblem(ctx *fiber.Ctx, pr Problem) error {
	switch {
	case pr.Title != "":
	case pr.Status == fiber.StatusForbidden:
		pr.Title = "Not allowed"
	case pr.Status == fiber.StatusNotFound:
		pr.Title = "Not found"
	case pr.Status == fiber.StatusConflict:
		pr.Title = "Not possible now"
	case pr.Status < 500:
		pr.Title = "That did not work"
	default:
		pr.Title = "Something went wrong"
	}
	return c.render(ctx, pr.Status, "problem", pr.Title, pr)
}

// IsConsolePath reports whether path (after the base path) is the console's.
func IsConsolePath(path string) bool {
	return path == "/console" || strings.HasPrefix(path, "/console/")
}

// has reports whether the caller holds perm.
func (c *Console) has(ctx *fiber.Ctx, perm domain.Permission) bool {
	return slices.Contains(c.uc.Authorizer.PermissionsFor(c.env.Principal(ctx)), perm)
}

// done redirects after a form post (POST-redirect-GET) to path with the
// outcome shown once.
func (c *Console) done(ctx *fiber.Ctx, path, outcome string) error {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return ctx.Redirect(path+sep+"done="+url.QueryEscape(outcome), fiber.StatusSeeOther)
}
