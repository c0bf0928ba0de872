package rest

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// named gives each caller of the harness the display name its identity
// provider would: text the person chose, markup included.
type named struct {
	ports.Authenticator
	names map[string]string
}

func (n named) Authenticate(ctx context.Context, cred ports.Credential) (domain.Principal, error) {
	p, err := n.Authenticator.Authenticate(ctx, cred)
	if err == nil {
		p.Name = n.names[p.Subject]
	}
	return p, err
}

// umaName is a display name a person could choose to attack the console.
const umaName = `Uma <script>alert(1)</script>`

func namesStart(t *testing.T) *axHarness {
	return axStart(t, filepath.Join(t.TempDir(), "agentauth.db"), axOptions{authn: func(keys ports.Authenticator) ports.Authenticator {
		return named{keys, map[string]string{"uma": umaName, "lea": "Lea Lead"}}
	}})
}

// TestAgentNamesAPI: an agent's name is optional, checked, answered and
// listed; /api/v2/me says how the credential names the caller.
func TestAgentNamesAPI(t *testing.T) {
	h := namesStart(t)
	_, session, unnamed := axSession(t, h, "auto")
	agents := "/api/v2/sessions/" + session + "/agents"
	a := h.must(t, 201, "uma", "POST", agents, `{"name":"notes <agent>","tools":["fs.read"]}`)
	if a["name"] != "notes <agent>" {
		t.Errorf("created %v, want named notes <agent>", a)
	}
	for _, bad := range []string{`"` + strings.Repeat("n", domain.MaxAgentName+1) + `"`, `"two\nlines"`, `"rtl\u202eoverride"`, `" padded"`, `42`} {
		if r := h.do(t, "uma", "POST", agents, `{"name":`+bad+`}`); r.status != 400 || r.errorOf(t).Code != "invalid_request" {
			t.Errorf("name %s: %d %s, want 400 invalid_request", bad, r.status, r.body)
		}
	}
	var page struct {
		Agents []agentJSON `json:"agents"`
	}
	h.do(t, "uma", "GET", agents, "").decode(t, &page)
	byID := map[string]string{}
	for _, g := range page.Agents {
		byID[g.ID] = g.Name
	}
	if len(byID) != 2 || byID[a["id"].(string)] != "notes <agent>" || byID[unnamed] != "" {
		t.Errorf("listed %+v; want the named agent and the unnamed one", page.Agents)
	}
	if me := h.must(t, 200, "uma", "GET", "/api/v2/me", ""); me["name"] != umaName || me["subject"] != "uma" {
		t.Errorf("me = %v, want uma named %q", me, umaName)
	}
	if me := h.must(t, 200, "bob", "GET", "/api/v2/me", ""); me["name"] != nil {
		t.Errorf("me = %v, want no name for bob", me)
	}
}

// TestConsoleShowsNames: the console's pages show the names of the people
// and agents they name beside their subjects and ids, escaped (a name is
// text its person chose: <script> in it is shown as text).
func TestConsoleShowsNames(t *testing.T) {
	h, w := namesWorld(t)
	session, root, child, pending := w.session, w.root, w.child, w.pending
	// The console's New agent form names it too.
	if r := h.do(t, "uma", "POST", "/console/sessions/"+session+"/agents", "name=form+%3Cb%3Eagent"); r.status != 200 { // after the redirect
		t.Fatalf("console: new agent: %d %s", r.status, r.body)
	}
	if r := h.do(t, "uma", "POST", "/console/sessions/"+session+"/agents", "name=two%0Alines"); r.status != 400 {
		t.Errorf("console: new agent named over two lines: %d, want 400", r.status)
	}

	uma := `Uma &lt;script&gt;alert(1)&lt;/script&gt;</span> <span class="mut">uma</span>`
	lea := `Lea Lead</span> <span class="mut">lea</span>`
	agent := `notes &lt;agent&gt;</span> <code>` + root + `</code>`
	helper := `helper</span> <code>` + child + `</code>`
	tests := []struct {
		page, as string
		want     []string
	}{
		{"/console/", "uma", []string{`<dt>Name</dt><dd>Uma &lt;script&gt;`, `Uma &lt;script&gt;alert(1)&lt;/script&gt; · uma (USER)`}},
		{"/console/sessions", "uma", []string{uma}},
		{"/console/sessions/" + session, "uma", []string{uma, lea, agent, helper, `<option value="` + root + `">notes &lt;agent&gt; (` + root + `)</option>`, `form &lt;b&gt;agent</span>`}},
		{"/console/approvals", "lea", []string{uma, agent, helper, "call-" + pending}},
		{"/console/keys", "uma", []string{uma}},
		{"/console/audit?subject=uma", "adm", []string{uma}},
		{"/console/connections", "adm", []string{uma}},
	}
	for _, tt := range tests {
		t.Run(tt.page, func(t *testing.T) {
			r := h.do(t, tt.as, "GET", tt.page, "")
			body := string(r.body)
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, body)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			if strings.Contains(body, "<script>") {
				t.Errorf("a name is shown unescaped: %s", body)
			}
		})
	}
}

// namesWorld is a session of uma (named umaName) in lea's project with a
// named agent and its named sub-agent, one call of it pending and one
// approved by lea (named "Lea Lead"), a key of uma's and her connection to
// gh.
type namesFixture struct{ session, root, child, pending, approved string }

func namesWorld(t *testing.T) (*axHarness, namesFixture) {
	h := namesStart(t)
	apollo, _ := axTeam(t, h)
	h.must(t, 201, "adm", "POST", "/api/v2/servers", `{"name":"fs","url":"http://127.0.0.1:7/mcp"}`)
	h.must(t, 201, "adm", "POST", "/api/v2/tools", `{"name":"fs.write","server":"fs"}`)
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"ask","tool":"fs.write","scope":"role","value":"USER"}`)
	session := h.must(t, 201, "uma", "POST", "/api/v2/sessions", `{"title":"s","project":"`+apollo+`","mode":"auto"}`)["id"].(string)
	root := h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/agents", `{"name":"notes <agent>"}`)["id"].(string)
	child := h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/agents", `{"parent":"`+root+`","name":"helper"}`)["id"].(string)
	decision, _, pending := decide(t, h, "uma", session, child, "fs.write")
	_, _, approved := decide(t, h, "uma", session, child, "fs.write")
	if decision != "ask" {
		t.Fatalf("fs.write: %s, want ask", decision)
	}
	h.must(t, 200, "lea", "POST", "/api/v2/sessions/"+session+"/tool-calls/"+approved+"/approve", "")
	h.must(t, 201, "uma", "POST", "/api/v2/keys", `{"name":"ci","permissions":["me:read"],"expires_at":"`+expiresIn(time.Hour)+`"}`)
	h.must(t, 201, "adm", "POST", "/api/v2/servers", `{"name":"gh","url":"https://gh.example/mcp","endpoint":"https://gh.internal/mcp",`+
		`"upstream_auth":{"type":"oauth2","issuer":"https://as.example/","client_id":"agentauth","scopes":["repo"]}}`)
	r := h.do(t, "uma", "GET", "/connect/gh", "")
	loc, err := url.Parse(r.location)
	if err != nil || r.status != 302 {
		t.Fatalf("GET /connect/gh = %d %q", r.status, r.location)
	}
	if r := h.do(t, "uma", "GET", "/connect/gh/callback?state="+url.QueryEscape(loc.Query().Get("state"))+"&code=c", ""); r.status != 303 {
		t.Fatalf("connect callback = %d %s", r.status, r.body)
	}
	return h, namesFixture{session, root, child, pending, approved}
}

// TestNamesInAnswers: list answers (and a session's) add the names agentauth
// knows beside the ids as *_name fields, leaving every other field as it
// was; a field is absent where no name is known.
func TestNamesInAnswers(t *testing.T) {
	h, w := namesWorld(t)
	var sessions struct {
		Sessions []sessionJSON `json:"sessions"`
	}
	h.do(t, "uma", "GET", "/api/v2/sessions", "").decode(t, &sessions)
	if len(sessions.Sessions) != 1 || sessions.Sessions[0].Owner != "uma" || sessions.Sessions[0].OwnerName != umaName {
		t.Errorf("sessions = %+v, want uma's named %q", sessions.Sessions, umaName)
	}
	if one := h.must(t, 200, "lea", "GET", "/api/v2/sessions/"+w.session, ""); one["owner"] != "uma" || one["owner_name"] != umaName {
		t.Errorf("session = %v", one)
	}
	var agents struct {
		Agents []agentJSON `json:"agents"`
	}
	h.do(t, "uma", "GET", "/api/v2/sessions/"+w.session+"/agents", "").decode(t, &agents)
	for _, a := range agents.Agents {
		if a.CreatedBy != "uma" || a.CreatedByName != umaName || a.Name == "" {
			t.Errorf("agent %+v, want named and made by uma named %q", a, umaName)
		}
	}
	var calls struct {
		Calls []toolCallJSON `json:"tool_calls"`
	}
	h.do(t, "uma", "GET", "/api/v2/sessions/"+w.session+"/tool-calls", "").decode(t, &calls)
	byID := map[string]toolCallJSON{}
	for _, c := range calls.Calls {
		byID[c.ID] = c
	}
	if c := byID[w.approved]; c.Agent != w.child || c.AgentName != "helper" || c.RequestedBy != "uma" || c.RequestedByName != umaName ||
		c.ResolvedBy != "lea" || c.ResolvedByName != "Lea Lead" {
		t.Errorf("approved call = %+v", c)
	}
	if c := byID[w.pending]; c.AgentName != "helper" || c.ResolvedBy != "" || c.ResolvedByName != "" {
		t.Errorf("pending call = %+v", c)
	}
	var keys struct {
		Keys []keyJSON `json:"keys"`
	}
	h.do(t, "uma", "GET", "/api/v2/keys", "").decode(t, &keys)
	if len(keys.Keys) != 1 || keys.Keys[0].Owner != "uma" || keys.Keys[0].OwnerName != umaName {
		t.Errorf("keys = %+v", keys.Keys)
	}
	var conns struct {
		Connections []connectionJSON `json:"connections"`
	}
	h.do(t, "aud", "GET", "/api/v2/connections", "").decode(t, &conns)
	if len(conns.Connections) != 1 || conns.Connections[0].Subject != "uma" || conns.Connections[0].SubjectName != umaName {
		t.Errorf("connections = %+v", conns.Connections)
	}
	// Nobody named: no field.
	bob := h.must(t, 201, "bob", "POST", "/api/v2/sessions", `{"title":"b"}`)["id"].(string)
	if r := h.do(t, "bob", "GET", "/api/v2/sessions/"+bob, ""); strings.Contains(string(r.body), "owner_name") {
		t.Errorf("bob's session = %s, want no owner_name", r.body)
	}
}
