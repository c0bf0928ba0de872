package rest

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/adapters/auditjson"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// axTeam sets up, over the API: project Apollo led by lea with member uma,
// and project Zeus led by adm with member bob. It returns the project IDs.
func axTeam(t *testing.T, h *axHarness) (apollo, zeus string) {
	t.Helper()
	apollo = h.must(t, 201, "lea", "POST", "/api/v2/projects", `{"name":"Apollo","members":[{"subject":"uma"}]}`)["id"].(string)
	zeus = h.must(t, 201, "adm", "POST", "/api/v2/projects", `{"name":"Zeus","members":[{"subject":"bob"}]}`)["id"].(string)
	return apollo, zeus
}

func sessionIDs(t *testing.T, h *axHarness, subject string) []string {
	t.Helper()
	var out struct {
		Sessions []struct{ ID string } `json:"sessions"`
	}
	r := h.do(t, subject, "GET", "/api/v2/sessions", "")
	r.decode(t, &out)
	var ids []string
	for _, s := range out.Sessions {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return ids
}

func sorted(ids ...string) []string { slices.Sort(ids); return ids }

func TestOwnershipAndTeamVisibility(t *testing.T) {
	h := axNew(t)
	apollo, zeus := axTeam(t, h)
	umaS := h.must(t, 201, "uma", "POST", "/api/v2/sessions", `{"title":"u","project":"`+apollo+`"}`)["id"].(string)
	umaP := h.must(t, 201, "uma", "POST", "/api/v2/sessions", `{"title":"personal"}`)["id"].(string)
	leaS := h.must(t, 201, "lea", "POST", "/api/v2/sessions", `{"title":"l","project":"`+apollo+`"}`)["id"].(string)
	bobS := h.must(t, 201, "bob", "POST", "/api/v2/sessions", `{"title":"b","project":"`+zeus+`"}`)["id"].(string)

	// A USER may not create sessions in a project it does not belong to.
	r := h.do(t, "uma", "POST", "/api/v2/sessions", `{"title":"x","project":"`+zeus+`"}`)
	if e := r.errorOf(t); r.status != 403 || e.ReasonCode != domain.ReasonNotProjectMember {
		t.Errorf("USER creating in a foreign project: %d %+v, want 403 %s", r.status, e, domain.ReasonNotProjectMember)
	}

	tests := []struct {
		subject string
		want    []string
	}{
		{"uma", sorted(umaS, umaP)},             // a USER sees only its own, not its lead's
		{"lea", sorted(umaS, leaS)},             // a LEAD sees its projects' (not uma's personal one)
		{"bob", sorted(bobS)},                   // another team sees nothing of Apollo
		{"aud", sorted(umaS, umaP, leaS, bobS)}, // AUDITOR reads all
		{"adm", sorted(umaS, umaP, leaS, bobS)},
	}
	for _, tt := range tests {
		if got := sessionIDs(t, h, tt.subject); !slices.Equal(got, tt.want) {
			t.Errorf("%s lists %v, want %v", tt.subject, got, tt.want)
		}
	}
	// Reads and writes of sessions one may not see are 404; of sessions one
	// may see but not change, 403 with the reason.
	checks := []struct {
		subject, method, path string
		want                  int
	}{
		{"uma", "GET", "/api/v2/sessions/" + leaS, 404},
		{"uma", "GET", "/api/v2/sessions/" + bobS, 404},
		{"lea", "GET", "/api/v2/sessions/" + bobS, 404},
		{"lea", "GET", "/api/v2/sessions/" + umaP, 404},
		{"lea", "GET", "/api/v2/sessions/" + umaS, 200},
		{"aud", "DELETE", "/api/v2/sessions/" + umaS, 403},
		{"uma", "DELETE", "/api/v2/sessions/" + leaS, 404},
		{"lea", "DELETE", "/api/v2/sessions/" + umaS, 204}, // a LEAD manages team sessions
		{"adm", "DELETE", "/api/v2/sessions/" + bobS, 204},
	}
	for _, c := range checks {
		if r := h.do(t, c.subject, c.method, c.path, ""); r.status != c.want {
			t.Errorf("%s %s as %s = %d %s, want %d", c.method, c.path, c.subject, r.status, r.body, c.want)
		}
	}
	// Projects: members see theirs; a LEAD manages members only of projects it leads.
	var list struct {
		Projects []struct{ ID string } `json:"projects"`
	}
	h.do(t, "uma", "GET", "/api/v2/projects", "").decode(t, &list)
	if len(list.Projects) != 1 || list.Projects[0].ID != apollo {
		t.Errorf("uma's projects = %+v, want only Apollo", list.Projects)
	}
	h.must(t, 404, "uma", "GET", "/api/v2/projects/"+zeus, "")
	h.must(t, 404, "lea", "PUT", "/api/v2/projects/"+zeus+"/members", `{"members":[]}`)
	h.must(t, 200, "lea", "PUT", "/api/v2/projects/"+apollo+"/members", `{"members":[{"subject":"lea","lead":true},{"subject":"uma"},{"subject":"bob"}]}`)
	if got := sessionIDs(t, h, "bob"); len(got) != 0 {
		t.Errorf("bob, now an Apollo member, lists %v; a USER still sees only its own", got)
	}
}

// axSession creates, as uma, a session in Apollo with a root agent; the
// ADMIN registers server fs with fs.read (read-only) and fs.write.
func axSession(t *testing.T, h *axHarness, mode string) (apollo, session, agent string) {
	t.Helper()
	apollo, _ = axTeam(t, h)
	h.must(t, 201, "adm", "POST", "/api/v2/servers", `{"name":"fs","url":"http://127.0.0.1:7/mcp"}`)
	h.must(t, 201, "adm", "POST", "/api/v2/tools", `{"name":"fs.read","server":"fs","read_only":true}`)
	h.must(t, 201, "adm", "POST", "/api/v2/tools", `{"name":"fs.write","server":"fs"}`)
	session = h.must(t, 201, "uma", "POST", "/api/v2/sessions", `{"title":"s","project":"`+apollo+`","mode":"`+mode+`"}`)["id"].(string)
	agent = h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/agents", "")["id"].(string)
	return apollo, session, agent
}

func decide(t *testing.T, h *axHarness, subject, session, agent, tool string) (decision, reason, id string) {
	t.Helper()
	out := h.must(t, 201, subject, "POST", "/api/v2/sessions/"+session+"/tool-calls", `{"agent":"`+agent+`","tool":"`+tool+`"}`)
	return out["decision"].(string), out["reason"].(string), out["id"].(string)
}

func TestPolicyDenyWinsAndNoRuleDenies(t *testing.T) {
	h := axNew(t)
	apollo, session, agent := axSession(t, h, "auto")
	if d, reason, _ := decide(t, h, "uma", session, agent, "fs.read"); d != "deny" || reason != domain.ReasonNoPolicyRule {
		t.Errorf("no rule: got %s/%s, want deny/%s", d, reason, domain.ReasonNoPolicyRule)
	}
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"allow","tool":"*","scope":"role","value":"USER"}`)
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"ask","tool":"fs.*","scope":"project","value":"`+apollo+`"}`)
	deny := h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"deny","tool":"fs.write","scope":"subject","value":"uma"}`)["id"].(string)
	// The custom role SECOPS (AUDITOR + policies:write) writes policies too.
	h.must(t, 201, "sec", "POST", "/api/v2/policies", `{"effect":"deny","tool":"shell.*","scope":"role","value":"USER"}`)
	r := h.do(t, "uma", "POST", "/api/v2/policies", `{"effect":"allow","tool":"*","scope":"subject","value":"uma"}`)
	if e := r.errorOf(t); r.status != 403 || e.Missing != "policies:write" || e.Reason != "role USER lacks policies:write" {
		t.Errorf("USER writing a policy: %d %+v, want 403 role USER lacks policies:write", r.status, e)
	}
	tests := []struct{ tool, decision, reason string }{
		{"web.get", "allow", domain.ReasonPolicyAllow},
		{"fs.read", "ask", domain.ReasonPolicyAsk},
		{"fs.write", "deny", domain.ReasonPolicyDeny},
		{"shell.run", "deny", domain.ReasonPolicyDeny},
	}
	for _, tt := range tests {
		if d, reason, _ := decide(t, h, "uma", session, agent, tt.tool); d != tt.decision || reason != tt.reason {
			t.Errorf("%s: got %s/%s, want %s/%s", tt.tool, d, reason, tt.decision, tt.reason)
		}
	}
	// The tool list hides what policy denies uma; the ADMIN sees all.
	var tools struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	h.do(t, "uma", "GET", "/api/v2/tools", "").decode(t, &tools)
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "fs.read" {
		t.Errorf("uma's tools = %+v, want fs.read only", tools.Tools)
	}
	h.must(t, 204, "adm", "DELETE", "/api/v2/policies/"+deny, "")
	if d, _, _ := decide(t, h, "uma", session, agent, "fs.write"); d != "ask" {
		t.Errorf("after removing the deny rule: got %s, want ask", d)
	}
	// With the gateway on, an unregistered tool is always denied.
	h.must(t, 200, "adm", "PUT", "/api/v2/admin/settings", `{"security_gateway":true,"default_session_mode":"ask"}`)
	if d, reason, _ := decide(t, h, "uma", session, agent, "web.get"); d != "deny" || reason != domain.ReasonGatewayUnknown {
		t.Errorf("gateway: got %s/%s, want deny/%s", d, reason, domain.ReasonGatewayUnknown)
	}
}

func TestSessionModes(t *testing.T) {
	h := axNew(t)
	_, session, agent := axSession(t, h, "auto")
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"allow","tool":"*","scope":"role","value":"USER"}`)
	if d, _, _ := decide(t, h, "uma", session, agent, "fs.write"); d != "allow" {
		t.Errorf("auto: fs.write %s, want allow", d)
	}
	h.must(t, 200, "uma", "PATCH", "/api/v2/sessions/"+session, `{"mode":"readonly"}`) // stricter: the owner may
	if d, reason, _ := decide(t, h, "uma", session, agent, "fs.write"); d != "deny" || reason != domain.ReasonModeReadonly {
		t.Errorf("readonly: fs.write %s/%s, want deny/%s", d, reason, domain.ReasonModeReadonly)
	}
	if d, _, _ := decide(t, h, "uma", session, agent, "fs.read"); d != "allow" {
		t.Errorf("readonly: fs.read %s, want allow", d)
	}
	before := h.snapshot(t)
	r := h.do(t, "uma", "PATCH", "/api/v2/sessions/"+session, `{"mode":"auto"}`)
	e := r.errorOf(t)
	if r.status != 403 || e.ReasonCode != domain.ReasonModeLoosening || e.Missing != string(domain.PermSessionsTeam) {
		t.Errorf("owner loosening: %d %+v, want 403 %s missing sessions:team", r.status, e, domain.ReasonModeLoosening)
	}
	if h.snapshot(t) != before {
		t.Error("a refused mode change changed the data")
	}
	h.must(t, 404, "bob", "PATCH", "/api/v2/sessions/"+session, `{"mode":"readonly"}`)
	h.must(t, 403, "aud", "PATCH", "/api/v2/sessions/"+session, `{"mode":"readonly"}`)
	h.must(t, 200, "lea", "PATCH", "/api/v2/sessions/"+session, `{"mode":"ask"}`) // the owner's LEAD may loosen
	if d, reason, _ := decide(t, h, "uma", session, agent, "fs.read"); d != "ask" || reason != domain.ReasonModeAsk {
		t.Errorf("ask: fs.read %s/%s, want ask/%s", d, reason, domain.ReasonModeAsk)
	}
	h.must(t, 400, "lea", "PATCH", "/api/v2/sessions/"+session, `{"mode":"yolo"}`)

	// The refusal is in the audit log with its reason code, as a denial.
	recs, err := h.store.QueryAudit(context.Background(), ports.AuditQuery{Subject: "uma", Decision: domain.AuditDeny})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, rec := range recs {
		found = found || (rec.Method == "PATCH" && rec.Status == 403 && strings.Contains(rec.Reason, domain.ReasonModeLoosening))
	}
	if !found {
		t.Errorf("no deny audit record with %s among %+v", domain.ReasonModeLoosening, recs)
	}
}

func TestSubAgentChainsNeverWiden(t *testing.T) {
	h := axNew(t)
	_, session, _ := axSession(t, h, "auto")
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"allow","tool":"*","scope":"role","value":"USER"}`)
	root := h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/agents", `{"tools":["fs.read","fs.write"]}`)["id"].(string)
	child := h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/agents", `{"parent":"`+root+`","tools":["fs.write","shell.run"]}`)
	if tools := child["tools"].([]any); len(tools) != 1 || tools[0] != "fs.write" {
		t.Errorf("child tools = %v, want [fs.write] (the intersection)", tools)
	}
	grand := h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/agents", `{"parent":"`+child["id"].(string)+`","mode":"ask"}`)
	if tools := grand["tools"].([]any); len(tools) != 1 || grand["approval"] != true || grand["depth"].(float64) != 2 {
		t.Errorf("grandchild = %v, want [fs.write], approval, depth 2", grand)
	}
	gid := grand["id"].(string)
	great := h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/agents", `{"parent":"`+gid+`","mode":"auto"}`)
	if great["approval"] != true {
		t.Errorf("great-grandchild asked for auto and got %v: a looser mode must not be granted", great)
	}
	tests := []struct {
		agent, tool, decision, reason string
	}{
		{root, "fs.read", "allow", domain.ReasonPolicyAllow},
		{gid, "fs.read", "deny", domain.ReasonAgentToolMissing},
		{gid, "fs.write", "ask", domain.ReasonAgentAsk},
	}
	for _, tt := range tests {
		if d, reason, _ := decide(t, h, "uma", session, tt.agent, tt.tool); d != tt.decision || reason != tt.reason {
			t.Errorf("agent %s tool %s: got %s/%s, want %s/%s", tt.agent, tt.tool, d, reason, tt.decision, tt.reason)
		}
	}
	// Another user cannot add agents to uma's session; an agent of another
	// session is not a parent here (not found, as for tool calls, so that
	// the existence of other sessions' agents does not leak).
	h.must(t, 404, "bob", "POST", "/api/v2/sessions/"+session+"/agents", "")
	other := h.must(t, 201, "uma", "POST", "/api/v2/sessions", `{"title":"o"}`)["id"].(string)
	h.must(t, 404, "uma", "POST", "/api/v2/sessions/"+other+"/agents", `{"parent":"`+root+`"}`)
	h.must(t, 404, "uma", "POST", "/api/v2/sessions/"+other+"/tool-calls", `{"agent":"`+root+`","tool":"fs.read"}`)
}

func TestApprovalsSurviveARestart(t *testing.T) {
	h := axNew(t)
	_, session, agent := axSession(t, h, "ask")
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"allow","tool":"*","scope":"role","value":"USER"}`)
	_, _, c1 := decide(t, h, "uma", session, agent, "fs.write")
	_, _, c2 := decide(t, h, "uma", session, agent, "fs.read")
	_, _, c3 := decide(t, h, "uma", session, agent, "fs.read")
	h.stop()

	h = axStart(t, h.path) // the same SQLite file, reopened
	h.must(t, 404, "bob", "POST", "/api/v2/sessions/"+session+"/tool-calls/"+c1+"/approve", "")
	h.must(t, 403, "aud", "POST", "/api/v2/sessions/"+session+"/tool-calls/"+c1+"/approve", "")
	if got := h.must(t, 200, "lea", "POST", "/api/v2/sessions/"+session+"/tool-calls/"+c1+"/approve", ""); got["status"] != "approved" || got["resolved_by"] != "lea" {
		t.Errorf("LEAD approval = %v, want approved by lea", got)
	}
	if got := h.must(t, 200, "uma", "POST", "/api/v2/sessions/"+session+"/tool-calls/"+c2+"/reject", ""); got["status"] != "rejected" {
		t.Errorf("owner rejection = %v", got)
	}
	h.must(t, 200, "adm", "POST", "/api/v2/sessions/"+session+"/tool-calls/"+c3+"/approve", "")
	h.must(t, 409, "uma", "POST", "/api/v2/sessions/"+session+"/tool-calls/"+c1+"/reject", "")
	h.stop()

	h = axStart(t, h.path)
	var list struct {
		Calls []struct{ ID, Status, ResolvedBy string } `json:"tool_calls"`
	}
	h.do(t, "aud", "GET", "/api/v2/sessions/"+session+"/tool-calls", "").decode(t, &list)
	got := map[string]string{}
	for _, c := range list.Calls {
		got[c.ID] = c.Status
	}
	want := map[string]string{c1: "approved", c2: "rejected", c3: "approved"}
	for id, status := range want {
		if got[id] != status {
			t.Errorf("after restart, call %s is %q, want %q", id, got[id], status)
		}
	}
	recs, err := h.store.QueryAudit(context.Background(), ports.AuditQuery{Subject: "lea", Decision: domain.AuditAllow})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 || !strings.Contains(recs[0].Reason, "tool call "+c1+" approved") {
		t.Errorf("lea's latest audit record = %+v, want the approval of %s", recs, c1)
	}
}

func TestDashboard(t *testing.T) {
	h := axNew(t)
	apollo, zeus := axTeam(t, h)
	h.must(t, 201, "uma", "POST", "/api/v2/sessions", `{"title":"a","project":"`+apollo+`"}`)
	h.must(t, 201, "bob", "POST", "/api/v2/sessions", `{"title":"z","project":"`+zeus+`"}`)
	h.must(t, 403, "uma", "GET", "/api/v2/audit", "")            // a denial of an Apollo member, not about Apollo
	h.must(t, 404, "bob", "GET", "/api/v2/projects/"+apollo, "") // a denial about Apollo, by a stranger
	h.must(t, 404, "uma", "GET", "/api/v2/projects/"+zeus, "")   // a denial about Zeus, by an Apollo member
	var lead struct {
		Projects      []string           `json:"projects"`
		SessionsTotal int                `json:"sessions_total"`
		ByOwner       map[string]int     `json:"by_owner"`
		RecentDenials []auditjson.Record `json:"recent_denials"`
	}
	h.do(t, "lea", "GET", "/api/v2/dashboard", "").decode(t, &lead)
	if lead.SessionsTotal != 1 || lead.ByOwner["uma"] != 1 || len(lead.Projects) != 1 || lead.Projects[0] != apollo {
		t.Errorf("LEAD dashboard = %+v, want Apollo's one session", lead)
	}
	for _, d := range lead.RecentDenials {
		if d.Path != "/api/v2/projects/"+apollo {
			t.Errorf("LEAD sees a denial not about Apollo: %s %s by %s", d.Method, d.Path, d.Subject)
		}
	}
	if len(lead.RecentDenials) != 1 {
		t.Errorf("LEAD dashboard shows %d denials, want bob's one about Apollo", len(lead.RecentDenials))
	}
	var all struct {
		SessionsTotal int `json:"sessions_total"`
	}
	h.do(t, "adm", "GET", "/api/v2/dashboard", "").decode(t, &all)
	if all.SessionsTotal != 2 {
		t.Errorf("ADMIN dashboard total = %d, want 2", all.SessionsTotal)
	}
	h.must(t, 403, "uma", "GET", "/api/v2/dashboard", "")
	h.must(t, 403, "aud", "GET", "/api/v2/dashboard", "")
}

func TestAuditExportAndVerify(t *testing.T) {
	// The records in the store's table, where the test edits one.
	h := axStart(t, filepath.Join(t.TempDir(), "agentauth.db"), axOptions{auditTable: true})
	for i := 0; i < 5; i++ {
		h.do(t, "uma", "GET", "/api/v2/sessions", "")
	}
	h.do(t, "uma", "GET", "/api/v2/audit", "")
	r := h.do(t, "aud", "GET", "/api/v2/audit/export", "")
	if r.status != 200 {
		t.Fatalf("export = %d %s", r.status, r.body)
	}
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	var seqs []int64
	for sc.Scan() {
		var rec auditjson.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		seqs = append(seqs, rec.Seq)
	}
	// The six requests before, in order, without gaps (the export's own
	// record may or may not be in the stream, depending on when it commits).
	if len(seqs) < 6 || len(seqs) > 7 {
		t.Errorf("export has %d records, want the 6 earlier ones (and perhaps its own)", len(seqs))
	}
	for i, seq := range seqs {
		if seq != int64(i+1) {
			t.Errorf("export seqs = %v, want 1, 2, 3, … without gaps", seqs)
			break
		}
	}
	h.must(t, 403, "uma", "GET", "/api/v2/audit/export", "")
	h.must(t, 403, "lea", "GET", "/api/v2/audit/verify", "")

	if got := h.must(t, 200, "aud", "GET", "/api/v2/audit/verify?from=0", ""); got["ok"] != true || got["checked"].(float64) < 9 {
		t.Errorf("verify = %v, want ok", got)
	}
	// Edit record 4 behind the service's back: verify names it.
	db, err := sql.Open("sqlite", "file:"+h.path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE audit SET subject = 'someone-else' WHERE seq = 4`); err != nil {
		t.Fatal(err)
	}
	got := h.must(t, 200, "adm", "GET", "/api/v2/audit/verify?from=0", "")
	brks, _ := got["breaks"].([]any)
	if got["ok"] != false || len(brks) != 1 || brks[0].(map[string]any)["seq"].(float64) != 4 || brks[0].(map[string]any)["kind"] != "edited" {
		t.Errorf("verify after tampering = %v, want one break: record 4 edited", got)
	}
}

// TestHiddenResourcesAreAuditedAsRefusals: a request for a resource the
// caller may not see answers 404 (its existence does not leak), but the
// audit log must record it as a refusal with its reason, so that probing
// other users' IDs shows up among the denials.
func TestHiddenResourcesAreAuditedAsRefusals(t *testing.T) {
	h := axNew(t)
	apollo, zeus := axTeam(t, h)
	leaS := h.must(t, 201, "lea", "POST", "/api/v2/sessions", `{"title":"l","project":"`+apollo+`"}`)["id"].(string)
	bobS := h.must(t, 201, "bob", "POST", "/api/v2/sessions", `{"title":"b","project":"`+zeus+`"}`)["id"].(string)
	bobA := h.must(t, 201, "bob", "POST", "/api/v2/sessions/"+bobS+"/agents", "")["id"].(string)
	umaS := h.must(t, 201, "uma", "POST", "/api/v2/sessions", `{"title":"u","project":"`+apollo+`"}`)["id"].(string)

	tests := []struct {
		subject, method, path, body string
	}{
		{"uma", "GET", "/api/v2/sessions/" + leaS, ""},
		{"uma", "DELETE", "/api/v2/sessions/" + leaS, ""},
		{"uma", "PATCH", "/api/v2/sessions/" + bobS, `{"mode":"readonly"}`},
		{"uma", "GET", "/api/v2/sessions/" + bobS + "/agents", ""},
		{"uma", "GET", "/api/v2/sessions/" + bobS + "/tool-calls", ""},
		{"uma", "POST", "/api/v2/sessions/" + bobS + "/agents", ""},
		{"uma", "POST", "/api/v2/sessions/" + umaS + "/agents", `{"parent":"` + bobA + `"}`},
		{"uma", "POST", "/api/v2/sessions/" + umaS + "/tool-calls", `{"agent":"` + bobA + `","tool":"fs.read"}`},
		{"lea", "GET", "/api/v2/projects/" + zeus, ""},
		{"lea", "PUT", "/api/v2/projects/" + zeus + "/members", `{"members":[]}`},
	}
	for _, tt := range tests {
		if r := h.do(t, tt.subject, tt.method, tt.path, tt.body); r.status != 404 {
			t.Errorf("%s %s as %s = %d %s, want 404", tt.method, tt.path, tt.subject, r.status, r.body)
		}
	}
	var page struct {
		Records []auditjson.Record `json:"records"`
	}
	h.do(t, "adm", "GET", "/api/v2/audit?limit=500", "").decode(t, &page)
	for _, tt := range tests {
		found := false
		for _, rec := range page.Records {
			if rec.Subject != tt.subject || rec.Method != tt.method || rec.Path != tt.path || rec.Status != 404 {
				continue
			}
			found = true
			if rec.Decision != string(domain.AuditDeny) || !strings.Contains(rec.Reason, "not visible") {
				t.Errorf("%s %s as %s: audited %s %q, want deny naming the resource as not visible", tt.method, tt.path, tt.subject, rec.Decision, rec.Reason)
			}
		}
		if !found {
			t.Errorf("%s %s as %s: no audit record", tt.method, tt.path, tt.subject)
		}
	}
}

// TestDeniedToolCallsAreAuditedAsDenials: a tool call answered `deny` is a
// refusal in the audit log (and so among the dashboard's recent denials),
// while `allow` and `ask` answers stay allowed requests.
func TestDeniedToolCallsAreAuditedAsDenials(t *testing.T) {
	h := axNew(t)
	_, session, agent := axSession(t, h, "auto")
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"allow","tool":"fs.read","scope":"role","value":"USER"}`)
	_, _, denied := decide(t, h, "uma", session, agent, "fs.write") // no rule allows it
	_, _, allowed := decide(t, h, "uma", session, agent, "fs.read")
	var page struct {
		Records []auditjson.Record `json:"records"`
	}
	h.do(t, "adm", "GET", "/api/v2/audit?limit=50", "").decode(t, &page)
	want := map[string]string{denied: string(domain.AuditDeny), allowed: string(domain.AuditAllow)}
	for _, rec := range page.Records {
		for id, decision := range want {
			if strings.Contains(rec.Reason, "tool call "+id) {
				if rec.Decision != decision || rec.Status != 201 {
					t.Errorf("tool call %s audited %s/%d (%q), want %s/201", id, rec.Decision, rec.Status, rec.Reason, decision)
				}
				delete(want, id)
			}
		}
	}
	if len(want) != 0 {
		t.Errorf("no audit record for tool calls %v", want)
	}
}

// TestDashboardLeadSeesOnlyItsProjectsResources: a LEAD who makes an ADMIN a
// member of its project (no consent needed) must not read the ADMIN's
// denials elsewhere through the dashboard (GET /api/v2/audit is 403 for a
// LEAD); it sees the denials about its projects' resources, whoever the
// caller was.
func TestDashboardLeadSeesOnlyItsProjectsResources(t *testing.T) {
	h := axNew(t)
	hermes := h.must(t, 201, "lea", "POST", "/api/v2/projects", `{"name":"Hermes","members":[{"subject":"adm"},{"subject":"uma"}]}`)["id"].(string)
	personal := h.must(t, 201, "adm", "POST", "/api/v2/sessions", `{"title":"private","mode":"auto"}`)["id"].(string)
	agent := h.must(t, 201, "adm", "POST", "/api/v2/sessions/"+personal+"/agents", "")["id"].(string)
	if d, _, _ := decide(t, h, "adm", personal, agent, "shell.secret-tool"); d != "deny" {
		t.Fatalf("adm's tool call in its own session = %s, want deny (no rule)", d)
	}
	h.must(t, 403, "uma", "GET", "/api/v2/audit", "") // a member's denial, not about Hermes
	shared := h.must(t, 201, "uma", "POST", "/api/v2/sessions", `{"title":"h","project":"`+hermes+`","mode":"auto"}`)["id"].(string)
	shAgent := h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+shared+"/agents", "")["id"].(string)
	if d, _, _ := decide(t, h, "uma", shared, shAgent, "fs.delete"); d != "deny" {
		t.Fatalf("uma's tool call in Hermes = %s, want deny", d)
	}
	h.must(t, 403, "lea", "GET", "/api/v2/audit", "")

	var lead struct {
		RecentDenials []auditjson.Record `json:"recent_denials"`
	}
	h.do(t, "lea", "GET", "/api/v2/dashboard", "").decode(t, &lead)
	var sawShared bool
	for _, d := range lead.RecentDenials {
		switch {
		case strings.Contains(d.Path, "/sessions/"+shared+"/"):
			sawShared = true
		default:
			t.Errorf("LEAD sees a denial that is not about its projects' resources: %s %s %s by %s", d.Method, d.Path, d.Reason, d.Subject)
		}
	}
	if !sawShared {
		t.Errorf("LEAD dashboard = %+v, want the denied tool call in the Hermes session", lead.RecentDenials)
	}
	var admin struct {
		RecentDenials []auditjson.Record `json:"recent_denials"`
	}
	h.do(t, "adm", "GET", "/api/v2/dashboard", "").decode(t, &admin)
	var sawPersonal bool
	for _, d := range admin.RecentDenials {
		sawPersonal = sawPersonal || strings.Contains(d.Path, personal)
	}
	if !sawPersonal {
		t.Error("ADMIN dashboard lacks its own denial: an ADMIN sees everything")
	}
}

// TestToolNamesAreCaseInsensitiveEverywhere: with "deny shell.* for USER",
// no spelling of a shell tool is allowed (a tool server that matches names
// case-insensitively would otherwise run a denied tool). Names are stored
// in one canonical form (lower-case ASCII); look-alike characters are
// refused, not folded.
func TestToolNamesAreCaseInsensitiveEverywhere(t *testing.T) {
	h := axNew(t)
	_, session, agent := axSession(t, h, "auto")
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"allow","tool":"*","scope":"role","value":"USER"}`)
	rule := h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"deny","tool":"SHELL.*","scope":"role","value":"USER"}`)
	if rule["tool"] != "shell.*" {
		t.Errorf("stored pattern = %v, want shell.*", rule["tool"])
	}
	if got := h.must(t, 201, "adm", "POST", "/api/v2/tools", `{"name":"Shell.Exec","server":"fs"}`); got["name"] != "shell.exec" {
		t.Errorf("registered tool name = %v, want shell.exec", got["name"])
	}
	h.must(t, 409, "adm", "POST", "/api/v2/tools", `{"name":"SHELL.EXEC","server":"fs"}`) // the same tool
	for _, tool := range []string{"shell.exec", "SHELL.exec", "Shell.Exec", "sHeLl.ExEc"} {
		if d, reason, _ := decide(t, h, "uma", session, agent, tool); d != "deny" || reason != domain.ReasonPolicyDeny {
			t.Errorf("%s: got %s/%s, want deny/%s", tool, d, reason, domain.ReasonPolicyDeny)
		}
	}
	for _, tool := range []string{"\u0455hell.exec", "ｓhell.exec", "shell.exec\u200b"} {
		r := h.do(t, "uma", "POST", "/api/v2/sessions/"+session+"/tool-calls", `{"agent":"`+agent+`","tool":"`+tool+`"}`)
		if r.status != 400 {
			t.Errorf("look-alike %q: got %d %s, want 400", tool, r.status, r.body)
		}
	}
	if d, _, _ := decide(t, h, "uma", session, agent, "FS.READ"); d != "allow" {
		t.Errorf("FS.READ: got %s, want allow (fs.read, read-only, allowed)", d)
	}
}

// TestDuplicateJSONKeysRefusedAtAnyDepth: a member object naming "subject"
// twice is refused like a duplicate at the top (see
// TestDuplicateJSONKeysAreRefused).
func TestDuplicateJSONKeysRefusedAtAnyDepth(t *testing.T) {
	h := axNew(t)
	r := h.do(t, "lea", "POST", "/api/v2/projects", `{"name":"P","members":[{"subject":"uma","subject":"adm"}]}`)
	if e := r.errorOf(t); r.status != 400 || !strings.Contains(e.Message, `duplicate key "subject"`) {
		t.Errorf("got %d %+v, want 400 naming the duplicate key subject", r.status, e)
	}
}
