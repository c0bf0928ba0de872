package rest

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"html"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/ports"
)

// BulkSessions (exported for the tests of rest_test) adds sessions from up to total-1 to the store's file in one
// transaction (the API's path commits and syncs each one, which would make
// 50,000 of them take minutes). Session i is sess_<i>, owned by owner,
// created i seconds after a fixed instant; every field has a fixed width,
// so every session's JSON has the same length.
func BulkSessions(tb testing.TB, dbPath, owner string, from, total int) {
	tb.Helper()
	bulkSessionsOf(tb, dbPath, func(int) string { return owner }, from, total)
}

// bulkSessionsOf is BulkSessions with session i owned by owner(i).
func bulkSessionsOf(tb testing.TB, dbPath string, owner func(i int) string, from, total int) {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=busy_timeout(20000)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	ins, err := tx.Prepare(`INSERT INTO sessions (id, owner, project, title, mode, state, created_at, owner_roles) VALUES (?, ?, '', 'bulk session', 'ask', 'active', ?, 'USER')`)
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 123456789, time.UTC)
	for i := from; i < total; i++ {
		if _, err := ins.Exec(fmt.Sprintf("sess_%08d", i), owner(i), start.Add(time.Duration(i)*time.Second).UnixNano()); err != nil {
			tb.Fatal(err)
		}
	}
	if err := errors.Join(ins.Close(), tx.Commit()); err != nil {
		tb.Fatal(err)
	}
}

// TestListCursors: a cursor that is not one is a 400 that says so, on
// every paged list; pages of agents and tool calls follow each other
// through next_cursor, newest first, the last one's null; the console's
// "Older" link carries the same cursor.
func TestListCursors(t *testing.T) {
	h := axNew(t)
	_, session, first := axSession(t, h, "auto")
	lists := []string{"/api/v2/sessions", "/api/v2/sessions/" + session + "/agents", "/api/v2/sessions/" + session + "/tool-calls"}
	for _, path := range lists {
		for _, cursor := range []string{"x", "%21%21%21", "bm8tZG90", "LTEueA", "MTIzLg", "YWJjLng"} {
			t.Run(path+" "+cursor, func(t *testing.T) {
				r := h.do(t, "uma", "GET", path+"?cursor="+cursor, "")
				if e := r.errorOf(t); r.status != 400 || e.Code != "invalid_request" || !strings.Contains(e.Message, "cursor") {
					t.Errorf("status %d, error %+v; want 400 invalid_request naming the cursor", r.status, e)
				}
			})
		}
	}
	agents := []string{first}
	for range 2 {
		agents = append(agents, h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/agents", "")["id"].(string))
	}
	var calls []string
	for range 3 {
		_, _, id := decide(t, h, "uma", session, first, "fs.read")
		calls = append(calls, id)
	}
	walk := func(path, field string) []string {
		var ids []string
		query := "?limit=2"
		for range 5 {
			out := h.must(t, 200, "uma", "GET", path+query, "")
			for _, it := range out[field].([]any) {
				ids = append(ids, it.(map[string]any)["id"].(string))
			}
			next, ok := out["next_cursor"].(string)
			if !ok {
				if out["next_cursor"] != nil {
					t.Errorf("%s: next_cursor %v, want a string or null", path, out["next_cursor"])
				}
				return ids
			}
			query = "?limit=2&cursor=" + url.QueryEscape(next)
		}
		t.Fatalf("%s: no last page", path)
		return nil
	}
	for _, tt := range []struct {
		path, field string
		created     []string
	}{
		{lists[1], "agents", agents},
		{lists[2], "tool_calls", calls},
	} {
		got := walk(tt.path, tt.field)
		want := slices.Clone(tt.created)
		slices.Reverse(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: walked %v, want the created newest first %v", tt.path, got, want)
		}
	}

	// The admin's lists page the same way: walked a page of one at a time,
	// they give what one page of 500 does.
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"deny","tool":"shell.*","scope":"role","value":"USER"}`)
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"allow","tool":"fs.*","scope":"role","value":"USER"}`)
	for _, list := range []struct{ path, field, key string }{
		{"/api/v2/projects", "projects", "id"}, {"/api/v2/servers", "servers", "name"}, {"/api/v2/tools", "tools", "name"},
		{"/api/v2/policies", "policies", "id"}, {"/api/v2/keys", "keys", "id"},
	} {
		var whole []string
		for _, it := range h.must(t, 200, "adm", "GET", list.path+"?limit=500", "")[list.field].([]any) {
			whole = append(whole, it.(map[string]any)[list.key].(string))
		}
		var walked []string
		query := "?limit=1"
		for range 10 {
			out := h.must(t, 200, "adm", "GET", list.path+query, "")
			for _, it := range out[list.field].([]any) {
				walked = append(walked, it.(map[string]any)[list.key].(string))
			}
			next, ok := out["next_cursor"].(string)
			if !ok {
				break
			}
			query = "?limit=1&cursor=" + url.QueryEscape(next)
		}
		if !slices.Equal(walked, whole) {
			t.Errorf("%s: walked %v, want %v", list.path, walked, whole)
		}
	}
	if tools := h.must(t, 200, "adm", "GET", "/api/v2/tools", "")["tools"].([]any); tools[0].(map[string]any)["name"] != "fs.write" {
		t.Errorf("tools = %v, want the newest, fs.write, first", tools)
	}

	// The console pages uma's sessions (50 a page) with the API's cursor.
	BulkSessions(t, h.path, "uma", 0, 60)
	next := regexp.MustCompile(`<a rel="next" href="([^"]+)">Older sessions</a>`)
	page := h.do(t, "uma", "GET", "/console/sessions", "")
	m := next.FindSubmatch(page.body)
	if page.status != 200 || m == nil || bytes.Contains(page.body, []byte("sess_00000000")) {
		t.Fatalf("console sessions = %d, next link %q; want 200, a link and not the oldest session", page.status, m)
	}
	page = h.do(t, "uma", "GET", html.UnescapeString(string(m[1])), "")
	if page.status != 200 || !bytes.Contains(page.body, []byte("sess_00000000")) || next.Match(page.body) {
		t.Errorf("console's older sessions = %d, want 200 with the oldest session and no further link:\n%s", page.status, page.body)
	}
}

// TestProjectMembersPaged: a project of 600 members comes back, in the
// project's own answer and in the list of projects, with the first
// ports.EmbeddedMembers of them by subject and members_more; its members are
// paged by GET /api/v2/projects/{id}/members (by subject, default 50,
// ?limit= clamped to 500, next_cursor) to the callers who may see the
// project, and to no one else.
func TestProjectMembersPaged(t *testing.T) {
	h := axNew(t)
	subjects := []string{"lea", "uma"}
	for i := range 598 {
		subjects = append(subjects, fmt.Sprintf("m%03d", i))
	}
	body := `{"name":"big","members":[{"subject":"lea","lead":true}`
	for _, s := range subjects[1:] {
		body += `,{"subject":"` + s + `"}`
	}
	id := h.must(t, 201, "adm", "POST", "/api/v2/projects", body+"]}")["id"].(string)
	slices.Sort(subjects)

	embedded := func(p map[string]any) {
		t.Helper()
		var got []string
		for _, m := range p["members"].([]any) {
			got = append(got, m.(map[string]any)["subject"].(string))
		}
		if !slices.Equal(got, subjects[:ports.EmbeddedMembers]) || p["members_more"] != true {
			t.Errorf("project %s embeds %d members %v…, members_more %v; want the first %d by subject and true",
				p["id"], len(got), got[:min(3, len(got))], p["members_more"], ports.EmbeddedMembers)
		}
	}
	embedded(h.must(t, 200, "uma", "GET", "/api/v2/projects/"+id, ""))
	embedded(h.must(t, 200, "adm", "GET", "/api/v2/projects", "")["projects"].([]any)[0].(map[string]any))
	if r := h.do(t, "adm", "GET", "/console/projects", ""); r.status != 200 || !bytes.Contains(r.body, []byte("<td>50&#43;</td>")) {
		t.Errorf("console projects: %d, want the big project's members counted 50+:\n%s", r.status, r.body)
	}

	members := func(subject, query string) ([]string, any) {
		t.Helper()
		out := h.must(t, 200, subject, "GET", "/api/v2/projects/"+id+"/members"+query, "")
		var got []string
		for _, m := range out["members"].([]any) {
			got = append(got, m.(map[string]any)["subject"].(string))
		}
		return got, out["next_cursor"]
	}
	for _, tt := range []struct {
		query string
		want  int
	}{{"", app.DefaultPageSize}, {"?limit=7", 7}, {"?limit=100000", app.MaxPageSize}} {
		got, next := members("lea", tt.query)
		if !slices.Equal(got, subjects[:tt.want]) || next == nil {
			t.Errorf("members%s = %d (%v…), next %v; want the first %d and a next cursor", tt.query, len(got), got[:min(3, len(got))], next, tt.want)
		}
	}
	var walked []string
	query := "?limit=250"
	for range 5 {
		got, next := members("uma", query)
		walked = append(walked, got...)
		if next == nil {
			break
		}
		query = "?limit=250&cursor=" + url.QueryEscape(next.(string))
	}
	if !slices.Equal(walked, subjects) {
		t.Errorf("walked %d members, want the %d by subject", len(walked), len(subjects))
	}

	// bob is in no project: the members are as hidden as the project.
	hidden := h.do(t, "bob", "GET", "/api/v2/projects/"+id, "")
	if r := h.do(t, "bob", "GET", "/api/v2/projects/"+id+"/members", ""); r.status != hidden.status || r.status != 404 {
		t.Errorf("bob: members %d, project %d; want 404 for both", r.status, hidden.status)
	}
	if r := h.do(t, "adm", "GET", "/api/v2/projects/"+id+"/members?cursor=x", ""); r.status != 400 {
		t.Errorf("bad cursor: %d %s, want 400", r.status, r.body)
	}
}

// TestDashboardStaysBoundedAsTheTableGrows: as the sessions an ADMIN's
// dashboard covers grow from 1,000 to 30,000 (200 owners), it counts at
// most the newest app.DashboardSessions of them, says so with
// sessions_capped, and names at most app.DashboardOwners owners (the most
// sessions first) with owners_capped: past the cap its answer is the same,
// byte for byte, however many sessions are stored.
func TestDashboardStaysBoundedAsTheTableGrows(t *testing.T) {
	if testing.Short() {
		t.Skip("30,000 sessions")
	}
	path := filepath.Join(t.TempDir(), "agentauth.db")
	h := axStart(t, path)
	owner := func(i int) string { return fmt.Sprintf("owner%03d", i%200) }
	type view struct {
		Total        int            `json:"sessions_total"`
		Capped       bool           `json:"sessions_capped"`
		ByState      map[string]int `json:"by_state"`
		ByOwner      map[string]int `json:"by_owner"`
		OwnersCapped bool           `json:"owners_capped"`
	}
	sizes := map[int]int{}
	have := 0
	for _, tt := range []struct {
		stored, total int
		capped        bool
	}{
		{1_000, 1_000, false},
		{app.DashboardSessions, app.DashboardSessions, false},
		{app.DashboardSessions + 1, app.DashboardSessions, true},
		{12_000, app.DashboardSessions, true},
		{30_000, app.DashboardSessions, true},
	} {
		bulkSessionsOf(t, path, owner, have, tt.stored)
		have = tt.stored
		r := h.do(t, "adm", "GET", "/api/v2/dashboard", "")
		if r.status != 200 {
			t.Fatalf("%d stored: %d %s", tt.stored, r.status, r.body)
		}
		var v view
		r.decode(t, &v)
		sizes[tt.stored] = len(r.body)
		if v.Total != tt.total || v.Capped != tt.capped || v.ByState["active"] != tt.total {
			t.Errorf("%d stored: total %d, capped %v, by_state %v; want %d, %v, all active", tt.stored, v.Total, v.Capped, v.ByState, tt.total, tt.capped)
		}
		counted := 0
		for _, n := range v.ByOwner {
			counted += n
		}
		if len(v.ByOwner) != app.DashboardOwners || !v.OwnersCapped || counted != tt.total*app.DashboardOwners/200 {
			t.Errorf("%d stored: %d owners counting %d sessions, owners_capped %v; want %d owners of %d sessions and true",
				tt.stored, len(v.ByOwner), counted, v.OwnersCapped, app.DashboardOwners, tt.total*app.DashboardOwners/200)
		}
	}
	if sizes[12_000] != sizes[30_000] || sizes[app.DashboardSessions+1] != sizes[30_000] {
		t.Errorf("answer bytes by sessions stored = %v, want one size past the cap", sizes)
	}
	t.Logf("dashboard answer bytes by sessions stored: %v", sizes)
}

// BenchmarkDashboardStored: GET /api/v2/dashboard of an ADMIN with 1,000,
// 10,000 and 50,000 sessions stored (200 owners): past 10,000 its cost
// stays that of counting the newest 10,000.
func BenchmarkDashboardStored(b *testing.B) {
	for _, rows := range []int{1_000, 10_000, 50_000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "agentauth.db")
			h := axStart(b, path)
			bulkSessionsOf(b, path, func(i int) string { return fmt.Sprintf("owner%03d", i%200) }, 0, rows)
			size := 0
			for b.Loop() {
				r := h.do(b, "adm", "GET", "/api/v2/dashboard", "")
				if r.status != 200 {
					b.Fatalf("GET = %d %s", r.status, r.body)
				}
				size = len(r.body)
			}
			b.ReportMetric(float64(size), "bytes/answer")
		})
	}
}
