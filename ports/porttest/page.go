package porttest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// The paging contract every list of every store keeps: newest first
// (creation time, then key, both descending, keys compared byte-wise);
// walking the pages with the cursor of each page's last item yields the
// whole list once, ties on the creation time included; and rows inserted
// while a client pages (newer than its first page) neither repeat nor
// hide a row of the walk.

// walk reads a list page by page, limit items at a time, each page after
// the cursor of the previous page's last item, calling between after each
// page, until a page comes back short.
func walk[T any](t *testing.T, list func(ports.Page) ([]T, error), at func(T) ports.Cursor, limit int, between func()) []T {
	t.Helper()
	var (
		all   []T
		after ports.Cursor
	)
	for range 100 {
		page, err := list(ports.Page{Limit: limit, After: after})
		if err != nil {
			t.Fatalf("page after %+v: %v", after, err)
		}
		if len(page) > limit {
			t.Fatalf("page of %d items, limit %d", len(page), limit)
		}
		all = append(all, page...)
		if len(page) < limit {
			return all
		}
		after = at(page[len(page)-1])
		if between != nil {
			between()
		}
	}
	t.Fatal("no end after 100 pages")
	return nil
}

// checkWalk checks that the whole list (one unbounded page) is want, by
// key (unless want is nil); then, for every limit from 1 to len(want)+1, that walking the list
// with a newer row inserted between pages yields exactly the list as it
// was when the walk began.
func checkWalk[T any](t *testing.T, what string, want []string, list func(ports.Page) ([]T, error), at func(T) ports.Cursor, insert func()) {
	t.Helper()
	keys := func(items []T) string {
		out := make([]string, len(items))
		for i, it := range items {
			out[i] = at(it).Key
		}
		return fmt.Sprint(out)
	}
	whole := func() string {
		all, err := list(ports.Page{})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return keys(all)
	}
	if got := whole(); want != nil && got != fmt.Sprint(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
	for limit := 1; limit <= len(want)+1; limit++ {
		before := whole()
		if got := keys(walk(t, list, at, limit, insert)); got != before {
			t.Errorf("%s, pages of %d with inserts between = %v, want %v", what, limit, got, before)
		}
	}
}

// later is after every time the suites use: rows created after it are
// newer than any first page.
var later = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func testSessionPages(t *testing.T, newStore Factory[ports.SessionStore]) {
	tests := []struct {
		name   string
		filter ports.SessionFilter
		want   []string
	}{
		{"all", ports.SessionFilter{}, []string{"a3", "c0", "b1", "a2", "a1", "b0", "a0"}},
		{"owner", ports.SessionFilter{Owner: "alice"}, []string{"a3", "a2", "a1", "a0"}},
		{"project", ports.SessionFilter{Projects: []string{"p-x"}}, []string{"c0", "a1", "b0"}},
		{"owner or projects, overlapping", ports.SessionFilter{Owner: "alice", Projects: []string{"p-x", "p-b1"}},
			[]string{"a3", "c0", "b1", "a2", "a1", "b0", "a0"}},
		{"owner or a hundred projects", ports.SessionFilter{Owner: "alice", Projects: append(projectsNamed(98), "p-x", "p-b1")},
			[]string{"a3", "c0", "b1", "a2", "a1", "b0", "a0"}},
		{"a hundred projects", ports.SessionFilter{Projects: append(projectsNamed(99), "p-x")}, []string{"c0", "a1", "b0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStore(t)
			fillForPages(t, st)
			ctx := ctxFor(t)
			n := 0
			insert := func() { // newer than every page read so far, and matching every filter
				n++
				s := session(fmt.Sprintf("new%03d", n), "alice", later.Add(time.Duration(n)*time.Second))
				s.Project = "p-x"
				if err := st.CreateSession(ctx, s); err != nil {
					t.Fatalf("CreateSession(%s): %v", s.ID, err)
				}
			}
			list := func(p ports.Page) ([]domain.Session, error) {
				f := tt.filter
				f.Page = p
				return st.ListSessions(ctx, f)
			}
			checkWalk(t, "ListSessions", tt.want, list, func(s domain.Session) ports.Cursor { return ports.CursorOf(s.CreatedAt, s.ID) }, insert)
		})
	}
}

// projectsNamed is n projects that hold no session.
func projectsNamed(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("p-empty-%02d", i)
	}
	return out
}

func fillForPages(t *testing.T, st ports.SessionStore) {
	ctx := ctxFor(t)
	// a1, a2 and b1 share a creation time; p-x holds sessions of both.
	for _, s := range []domain.Session{
		session("a0", "alice", base),
		session("b0", "bob", base.Add(time.Nanosecond)),
		session("a1", "alice", base.Add(time.Second)),
		session("a2", "alice", base.Add(time.Second)),
		session("b1", "bob", base.Add(time.Second)),
		session("c0", "carol", base.Add(2*time.Second)),
		session("a3", "alice", base.Add(3*time.Second)),
	} {
		if s.ID == "b0" || s.ID == "c0" || s.ID == "a1" {
			s.Project = "p-x"
		}
		if err := st.CreateSession(ctx, s); err != nil {
			t.Fatalf("CreateSession(%s): %v", s.ID, err)
		}
	}
}

func testAgentAndToolCallPages(t *testing.T, st AccessStore) {
	ctx := ctxFor(t)
	times := []time.Duration{0, time.Second, time.Second, time.Second, 2 * time.Second}
	for i, d := range times {
		id := fmt.Sprintf("x%d", i)
		if err := st.CreateAgent(ctx, domain.Agent{ID: id, Session: "s1", CreatedBy: "uma", CreatedAt: t0.Add(d)}); err != nil {
			t.Fatalf("CreateAgent(%s): %v", id, err)
		}
		call := domain.ToolCall{ID: id, Session: "s1", Agent: "x0", Tool: "fs.read", Status: domain.CallAllowed, RequestedBy: "uma",
			CreatedAt: t0.Add(d), Decision: domain.ToolDecision{Effect: domain.EffectAllow, Reason: domain.ReasonPolicyAllow}}
		if err := st.CreateToolCall(ctx, call); err != nil {
			t.Fatalf("CreateToolCall(%s): %v", id, err)
		}
	}
	// Another session's rows are never on the page.
	if err := st.CreateAgent(ctx, domain.Agent{ID: "other", Session: "s2", CreatedAt: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	want := []string{"x4", "x3", "x2", "x1", "x0"}
	n := 0
	checkWalk(t, "ListAgents", want, func(p ports.Page) ([]domain.Agent, error) {
		return st.ListAgents(ctx, "s1", p)
	}, func(a domain.Agent) ports.Cursor { return ports.CursorOf(a.CreatedAt, a.ID) }, func() {
		n++
		if err := st.CreateAgent(ctx, domain.Agent{ID: fmt.Sprintf("new%03d", n), Session: "s1", CreatedAt: t0.Add(time.Hour + time.Duration(n))}); err != nil {
			t.Fatal(err)
		}
	})
	checkWalk(t, "ListToolCalls", want, func(p ports.Page) ([]domain.ToolCall, error) {
		return st.ListToolCalls(ctx, ports.ToolCallFilter{Session: "s1", Page: p})
	}, func(c domain.ToolCall) ports.Cursor { return ports.CursorOf(c.CreatedAt, c.ID) }, func() {
		n++
		call := domain.ToolCall{ID: fmt.Sprintf("new%03d", n), Session: "s1", Agent: "x0", Tool: "fs.read", Status: domain.CallAllowed,
			CreatedAt: t0.Add(time.Hour + time.Duration(n)), Decision: domain.ToolDecision{Effect: domain.EffectAllow, Reason: domain.ReasonPolicyAllow}}
		if err := st.CreateToolCall(ctx, call); err != nil {
			t.Fatal(err)
		}
	})
}

// testCatalogPages pages projects (all, and a member's), servers, tools
// and policies: five of each, three created at the same instant.
func testCatalogPages(t *testing.T, st AccessStore) {
	ctx := ctxFor(t)
	times := []time.Duration{0, time.Second, time.Second, time.Second, 2 * time.Second}
	n := 0
	newer := func() time.Time { n++; return later.Add(time.Duration(n) * time.Second) }
	member := []domain.Member{{Subject: "uma"}}
	for i, d := range times {
		id := fmt.Sprintf("x%d", i)
		if err := st.CreateProject(ctx, domain.Project{ID: id, Name: id, CreatedAt: t0.Add(d), Members: member}); err != nil {
			t.Fatalf("CreateProject(%s): %v", id, err)
		}
		if err := st.CreateServer(ctx, domain.Server{Name: id, URL: "http://127.0.0.1:9/" + id, CreatedAt: t0.Add(d)}); err != nil {
			t.Fatalf("CreateServer(%s): %v", id, err)
		}
		if err := st.CreateTool(ctx, domain.Tool{Name: id + ".run", Server: id, CreatedAt: t0.Add(d)}); err != nil {
			t.Fatalf("CreateTool(%s): %v", id, err)
		}
		if err := st.CreatePolicy(ctx, domain.PolicyRule{ID: id, Effect: domain.EffectAllow, Tool: "*", Scope: domain.ScopeRole, Value: "USER", CreatedAt: t0.Add(d)}); err != nil {
			t.Fatalf("CreatePolicy(%s): %v", id, err)
		}
	}
	// Another subject's project is not on uma's pages.
	if err := st.CreateProject(ctx, domain.Project{ID: "other", Name: "other", CreatedAt: t0.Add(time.Second), Members: []domain.Member{{Subject: "bob"}}}); err != nil {
		t.Fatal(err)
	}
	want := []string{"x4", "x3", "x2", "x1", "x0"}
	projectAt := func(p domain.Project) ports.Cursor { return ports.CursorOf(p.CreatedAt, p.ID) }
	newProject := func() {
		at := newer()
		if err := st.CreateProject(ctx, domain.Project{ID: fmt.Sprintf("new%03d", n), Name: "new", CreatedAt: at, Members: member}); err != nil {
			t.Fatal(err)
		}
	}
	checkWalk(t, "ListProjects(uma)", want, func(p ports.Page) ([]domain.Project, error) {
		return st.ListProjects(ctx, ports.ProjectFilter{Member: "uma", Page: p})
	}, projectAt, newProject)
	checkWalk(t, "ListProjects", nil, // uma's walks added projects
		func(p ports.Page) ([]domain.Project, error) {
			return st.ListProjects(ctx, ports.ProjectFilter{Page: p})
		}, projectAt, newProject)
	// A project's members page by subject (ascending; members have no
	// creation time): a member added while a client pages sorts before
	// every other, so before any cursor, and is never on a later page.
	members := []domain.Member{{Subject: "m3"}, {Subject: "m1", Lead: true}, {Subject: "m2"}, {Subject: "m0"}, {Subject: "m4"}}
	if err := st.SetMembers(ctx, "x0", members); err != nil {
		t.Fatal(err)
	}
	checkWalk(t, "ListMembers(x0)", []string{"m0", "m1", "m2", "m3", "m4"},
		func(p ports.Page) ([]domain.Member, error) { return st.ListMembers(ctx, "x0", p) },
		func(m domain.Member) ports.Cursor { return ports.CursorOf(t0, m.Subject) }, func() {
			n++
			members = append(members, domain.Member{Subject: fmt.Sprintf("a%03d", 999-n)})
			if err := st.SetMembers(ctx, "x0", members); err != nil {
				t.Fatal(err)
			}
		})
	if page, err := st.ListMembers(ctx, "x0", ports.Page{Limit: 2, After: ports.CursorOf(t0, "m0")}); err != nil ||
		len(page) != 2 || page[0] != (domain.Member{Subject: "m1", Lead: true}) || page[1].Subject != "m2" {
		t.Errorf("ListMembers(x0, 2 after m0) = %+v, %v; want m1 (lead), m2", page, err)
	}
	if page, err := st.ListMembers(ctx, "other", ports.Page{Limit: 50}); err != nil || len(page) != 1 || page[0].Subject != "bob" {
		t.Errorf("ListMembers(other) = %+v, %v; want bob alone", page, err)
	}
	// A page of projects carries at most EmbeddedMembers+1 members of each,
	// the first by subject; the project itself, and an unpaged list, all.
	many := make([]domain.Member, ports.EmbeddedMembers+10)
	for i := range many {
		many[i] = domain.Member{Subject: fmt.Sprintf("b%03d", len(many)-1-i), Lead: i == 0}
	}
	if err := st.SetMembers(ctx, "x4", many); err != nil {
		t.Fatal(err)
	}
	subjects := func(ms []domain.Member) []string {
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = m.Subject
		}
		return out
	}
	whole := subjects(many)
	slices.Sort(whole)
	for _, tt := range []struct {
		what string
		page ports.Page
		want []string
	}{
		{"a page", ports.Page{Limit: 2, After: ports.CursorOf(t0.Add(3*time.Second), "x5")}, whole[:ports.EmbeddedMembers+1]},
		{"unpaged", ports.Page{}, whole},
	} {
		list, err := st.ListProjects(ctx, ports.ProjectFilter{Page: tt.page})
		i := slices.IndexFunc(list, func(p domain.Project) bool { return p.ID == "x4" })
		if err != nil || i < 0 || !slices.Equal(subjects(list[i].Members), tt.want) {
			t.Errorf("ListProjects, %s: %v; want x4 with %d members, the first by subject", tt.what, err, len(tt.want))
		}
	}
	if p, err := st.GetProject(ctx, "x4"); err != nil || len(p.Members) != len(many) || !p.IsLead("b059") {
		t.Errorf("GetProject(x4): %d members, %v; want all %d, b059 leading", len(p.Members), err, len(many))
	}
	checkWalk(t, "ListServers", want, func(p ports.Page) ([]domain.Server, error) { return st.ListServers(ctx, p) },
		func(sv domain.Server) ports.Cursor { return ports.CursorOf(sv.CreatedAt, sv.Name) }, func() {
			if err := st.CreateServer(ctx, domain.Server{Name: fmt.Sprintf("new%03d", n), URL: "http://127.0.0.1:9/new", CreatedAt: newer()}); err != nil {
				t.Fatal(err)
			}
		})
	checkWalk(t, "ListTools", []string{"x4.run", "x3.run", "x2.run", "x1.run", "x0.run"}, func(p ports.Page) ([]domain.Tool, error) { return st.ListTools(ctx, p) },
		func(tl domain.Tool) ports.Cursor { return ports.CursorOf(tl.CreatedAt, tl.Name) }, func() {
			if err := st.CreateTool(ctx, domain.Tool{Name: fmt.Sprintf("new%03d.run", n), Server: "x0", CreatedAt: newer()}); err != nil {
				t.Fatal(err)
			}
		})
	checkWalk(t, "ListPolicies", want, func(p ports.Page) ([]domain.PolicyRule, error) { return st.ListPolicies(ctx, p) },
		func(r domain.PolicyRule) ports.Cursor { return ports.CursorOf(r.CreatedAt, r.ID) }, func() {
			if err := st.CreatePolicy(ctx, domain.PolicyRule{ID: fmt.Sprintf("new%03d", n), Effect: domain.EffectDeny, Tool: "x", Scope: domain.ScopeRole,
				Value: "USER", CreatedAt: newer()}); err != nil {
				t.Fatal(err)
			}
		})
}

// testAPIKeyPages pages every key and an owner's.
func testAPIKeyPages(t *testing.T, st APIKeyStore) {
	ctx := ctxFor(t)
	times := []time.Duration{0, time.Second, time.Second, time.Second, 2 * time.Second}
	for i, d := range times {
		for _, owner := range []string{"alice", "bob"} {
			k := apiKey(fmt.Sprintf("%s%07d", strings.Repeat(owner[:1], 5), i), owner, base.Add(d))
			if err := st.CreateAPIKey(ctx, k, 100, base); err != nil {
				t.Fatalf("CreateAPIKey(%s): %v", k.ID, err)
			}
		}
	}
	n := 0
	insert := func() {
		n++
		if err := st.CreateAPIKey(ctx, apiKey(fmt.Sprintf("nnnnnnnnn%03d", n), "alice", later.Add(time.Duration(n)*time.Second)), 100, base); err != nil {
			t.Fatal(err)
		}
	}
	at := func(k domain.APIKey) ports.Cursor { return ports.CursorOf(k.CreatedAt, k.ID) }
	checkWalk(t, "ListAPIKeys(alice)", []string{"aaaaa0000004", "aaaaa0000003", "aaaaa0000002", "aaaaa0000001", "aaaaa0000000"},
		func(p ports.Page) ([]domain.APIKey, error) { return st.ListAPIKeys(ctx, "alice", p) }, at, insert)
	for i := range 5 {
		o := domain.KeyOwner{Subject: domain.ServiceAccountSubject(fmt.Sprintf("m%d", i)), Roles: []domain.Role{"OPS"}, Service: true, UpdatedAt: base}
		if err := st.CreateKeyOwner(ctx, o); err != nil {
			t.Fatal(err)
		}
		if err := st.PutKeyOwner(ctx, domain.KeyOwner{Subject: fmt.Sprintf("person-%d", i), UpdatedAt: base}); err != nil {
			t.Fatal(err)
		}
	}
	// Owners page by subject, ascending: each new account sorts before
	// every other, so before any cursor, and is never on a later page.
	checkWalk(t, "ListKeyOwners(service)", []string{"service:m0", "service:m1", "service:m2", "service:m3", "service:m4"},
		func(p ports.Page) ([]domain.KeyOwner, error) { return st.ListKeyOwners(ctx, true, p) },
		func(o domain.KeyOwner) ports.Cursor { return ports.CursorOf(base, o.Subject) }, func() {
			n++
			o := domain.KeyOwner{Subject: domain.ServiceAccountSubject(fmt.Sprintf("a%03d", 999-n)), Service: true, UpdatedAt: base}
			if err := st.CreateKeyOwner(ctx, o); err != nil {
				t.Fatal(err)
			}
		})
	checkWalk(t, "ListAPIKeys", nil, func(p ports.Page) ([]domain.APIKey, error) { return st.ListAPIKeys(ctx, "", p) }, at, insert)
}
