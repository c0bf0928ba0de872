package porttest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// AccessStore is every store port of the access model, plus the session
// store whose sessions it filters and whose modes it changes.
type AccessStore interface {
	ports.ProjectStore
	ports.CatalogStore
	ports.PolicyStore
	ports.AgentStore
	ports.ToolCallStore
	ports.SessionModeStore
	ports.SessionStore
	ports.QuotaStore
}

// RunAccessStore checks the access-model ports of a store. The cases follow
// the SQLite store's own tests (adapters/store/sqlite/access_test.go), so
// that every store is held to the same semantics.
func RunAccessStore(t *testing.T, newStore Factory[AccessStore]) {
	t.Run("Projects", func(t *testing.T) { testProjects(t, newStore(t)) })
	t.Run("CatalogAndPolicies", func(t *testing.T) { testCatalogAndPolicies(t, newStore(t)) })
	t.Run("AgentsAndToolCalls", func(t *testing.T) { testAgentsAndToolCalls(t, newStore(t)) })
	t.Run("AgentAndToolCallPages", func(t *testing.T) { testAgentAndToolCallPages(t, newStore(t)) })
	t.Run("CatalogPages", func(t *testing.T) { testCatalogPages(t, newStore(t)) })
	t.Run("CatalogChanges", func(t *testing.T) { testCatalogChanges(t, newStore(t)) })
	t.Run("SessionsByOwnerOrProjectAndMode", func(t *testing.T) { testSessionsByProject(t, newStore(t)) })
	t.Run("Quotas", func(t *testing.T) { testQuotas(t, newStore(t)) })
	t.Run("ToolPins", func(t *testing.T) { testToolPins(t, newStore(t)) })
}

// testToolPins: a definition is pinned at registration or once, a drift is
// recorded once per definition and accepted only by its digest, and a
// change of server drops the pin.
func testToolPins(t *testing.T, st AccessStore) {
	ctx := ctxFor(t)
	for _, sv := range []string{"fs", "git"} {
		if err := st.CreateServer(ctx, domain.Server{Name: sv, URL: "http://127.0.0.1:9/" + sv, CreatedAt: t0}); err != nil {
			t.Fatalf("CreateServer: %v", err)
		}
	}
	v1, v2, v3 := `{"description":"Read.","name":"fs.read"}`, `{"description":"Read!","name":"fs.read"}`, `{"description":"Read?","name":"fs.read"}`
	d1, d2, d3 := domain.DefinitionDigest([]byte(v1)), domain.DefinitionDigest([]byte(v2)), domain.DefinitionDigest([]byte(v3))
	read := domain.Tool{Name: "fs.read", Server: "fs", ReadOnly: true, CreatedAt: t0, Pin: domain.ToolPin{Definition: v1, Digest: d1}}
	hand := domain.Tool{Name: "fs.list", Server: "fs", CreatedAt: t0}
	for _, tl := range []domain.Tool{read, hand} {
		if err := st.CreateTool(ctx, tl); err != nil {
			t.Fatalf("CreateTool: %v", err)
		}
	}
	pin := func(name string) domain.ToolPin {
		t.Helper()
		got, err := st.GetTool(ctx, name)
		if err != nil {
			t.Fatalf("GetTool: %v", err)
		}
		return got.Pin
	}
	if got := pin("fs.read"); got != read.Pin {
		t.Errorf("registered pin = %+v, want %+v", got, read.Pin)
	}
	if err := st.PinTool(ctx, "fs.read", v2, d2); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("PinTool of a pinned tool = %v, want ErrNotFound", err)
	}
	if err := st.PinTool(ctx, "FS.LIST", v1, d1); err != nil || pin("fs.list").Digest != d1 {
		t.Errorf("PinTool of an unpinned tool = %v, pin %+v", err, pin("fs.list"))
	}
	if err := st.RecordToolDrift(ctx, "fs.read", v1, d1, t0); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("RecordToolDrift of the pinned definition = %v, want ErrNotFound", err)
	}
	at := t0.Add(time.Minute)
	if err := st.RecordToolDrift(ctx, "fs.read", v2, d2, at); err != nil {
		t.Fatalf("RecordToolDrift: %v", err)
	}
	if err := st.RecordToolDrift(ctx, "fs.read", v2, d2, at.Add(time.Minute)); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("RecordToolDrift twice = %v, want ErrNotFound (recorded once)", err)
	}
	want := domain.ToolPin{Definition: v1, Digest: d1, Changed: v2, ChangedDigest: d2, ChangedAt: at}
	if got := pin("fs.read"); got != want {
		t.Errorf("pin after a drift = %+v, want %+v", got, want)
	}
	if err := st.AcceptToolDefinition(ctx, "fs.read", d3); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("AcceptToolDefinition of another digest = %v, want ErrNotFound", err)
	}
	if err := st.AcceptToolDefinition(ctx, "fs.read", d2); err != nil {
		t.Fatalf("AcceptToolDefinition: %v", err)
	}
	if got := pin("fs.read"); got != (domain.ToolPin{Definition: v2, Digest: d2}) {
		t.Errorf("pin after acceptance = %+v", got)
	}
	moved := domain.Tool{Name: "fs.read", Server: "git", ReadOnly: true}
	if err := st.UpdateTool(ctx, moved); err != nil {
		t.Fatalf("UpdateTool: %v", err)
	}
	if got := pin("fs.read"); got != (domain.ToolPin{}) {
		t.Errorf("pin after moving the tool to another server = %+v, want none", got)
	}
}

// testQuotas: charges count all or none, a new window starts anew, a later
// window the store holds stays, and QuotaUse lists the windows running.
func testQuotas(t *testing.T, st AccessStore) {
	ctx := ctxFor(t)
	hour := domain.Limit{Calls: 2, Per: time.Hour, By: domain.LimitByAgent}
	charge := func(key string, calls int, at time.Time) domain.QuotaCharge {
		l := hour
		l.Calls = calls
		start, end := l.Window(at)
		return domain.QuotaCharge{Key: key, Limit: l, Start: start, End: end}
	}
	t0 := time.Date(2026, 11, 28, 14, 10, 0, 0, time.UTC)
	expect := func(step string, charges []domain.QuotaCharge, index int, end time.Time) {
		t.Helper()
		i, e, err := st.ChargeQuotas(ctx, charges)
		if err != nil || i != index || index >= 0 && !e.Equal(end) {
			t.Fatalf("%s: ChargeQuotas = %d, %v, %v; want %d, %v", step, i, e, err, index, end)
		}
	}
	end := t0.Truncate(time.Hour).Add(time.Hour)
	expect("1st of a", []domain.QuotaCharge{charge("a", 2, t0)}, -1, end)
	expect("1st of b with 2nd of a", []domain.QuotaCharge{charge("b", 5, t0), charge("a", 2, t0)}, -1, end)
	// a is used up: nothing is counted, b neither.
	expect("3rd of a", []domain.QuotaCharge{charge("b", 5, t0), charge("a", 2, t0)}, 1, end)
	use, err := st.QuotaUse(ctx, t0, 10)
	if err != nil || len(use) != 2 || use[0].Key != "a" || use[0].Calls != 2 || use[1].Key != "b" || use[1].Calls != 1 || !use[0].End.Equal(end) {
		t.Fatalf("QuotaUse = %+v, %v; want a 2, b 1 (b's refused charge not counted)", use, err)
	}
	// The next window starts anew; an instance whose clock lags counts
	// in it too.
	next := t0.Add(time.Hour)
	expect("a in the next window", []domain.QuotaCharge{charge("a", 2, next)}, -1, end)
	expect("a from a lagging clock", []domain.QuotaCharge{charge("a", 2, t0)}, -1, end)
	expect("a's third in the next window", []domain.QuotaCharge{charge("a", 2, next)}, 0, end.Add(time.Hour))
	if use, err := st.QuotaUse(ctx, next, 10); err != nil || len(use) != 1 || use[0].Key != "a" || use[0].Calls != 2 {
		t.Errorf("QuotaUse in the next window = %+v, %v; want a alone (b's window ended)", use, err)
	}
}

// RunSharedAccessStore checks what instances sharing one database rely on:
// a pending tool call resolved (or withdrawn by its waiter) at once from
// several instances is resolved exactly once.
func RunSharedAccessStore(t *testing.T, open SharedFactory[AccessStore]) {
	t.Run("OneResolutionWinsAcrossInstances", func(t *testing.T) {
		handles := open(t, 3)
		ctx := ctxFor(t)
		call := domain.ToolCall{ID: "c1", Session: "s1", Agent: "a0", Tool: "fs.write", Status: domain.CallPending, RequestedBy: "uma", CreatedAt: base,
			Decision: domain.ToolDecision{Effect: domain.EffectAsk, Reason: domain.ReasonModeAsk, Message: "ask"}, Waiter: "w1"}
		if err := handles[0].CreateToolCall(ctx, call); err != nil {
			t.Fatalf("CreateToolCall: %v", err)
		}
		const approvers = 6
		var (
			wg   sync.WaitGroup
			errs = make([]error, approvers)
		)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i%3 == 2 {
					_, errs[i] = handles[i%len(handles)].WithdrawWaiting(ctx, "w1", "waiter gone", base.Add(time.Minute))
					return
				}
				status := []domain.ToolCallStatus{domain.CallApproved, domain.CallRejected}[i%2]
				_, errs[i] = handles[i%len(handles)].ResolveToolCall(ctx, "c1", status, "approver", base.Add(time.Minute))
			}()
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, domain.ErrConflict) && !errors.Is(err, domain.ErrNotFound):
				t.Fatalf("ResolveToolCall, WithdrawWaiting: %v, want nil, ErrConflict or ErrNotFound", err)
			}
		}
		if wins != 1 {
			t.Errorf("concurrent resolutions: %d won, want exactly 1", wins)
		}
	})
	// Instances keep the rules compiled in memory and recompile when the
	// policy version moves: a change through one instance must move the
	// version every other instance reads, at once.
	t.Run("PolicyVersionMovesOnEveryInstanceAtOnce", func(t *testing.T) {
		handles := open(t, 2)
		ctx := ctxFor(t)
		a, b := handles[0], handles[1]
		before, err := b.PolicyVersion(ctx)
		if err != nil {
			t.Fatalf("PolicyVersion: %v", err)
		}
		r := domain.PolicyRule{ID: "r1", Effect: domain.EffectDeny, Tool: "*", Scope: domain.ScopeRole, Value: "USER", CreatedAt: base}
		if err := a.CreatePolicy(ctx, r); err != nil {
			t.Fatalf("CreatePolicy: %v", err)
		}
		created, err := b.PolicyVersion(ctx)
		if err != nil || created == before {
			t.Fatalf("version on the other instance after a new rule: %d, %v; was %d", created, err, before)
		}
		if err := a.DeletePolicy(ctx, "r1"); err != nil {
			t.Fatalf("DeletePolicy: %v", err)
		}
		if deleted, err := b.PolicyVersion(ctx); err != nil || deleted == created {
			t.Errorf("version on the other instance after a delete: %d, %v; was %d", deleted, err, created)
		}
	})
}

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC)

func testProjects(t *testing.T, st AccessStore) {
	ctx := ctxFor(t)
	p1 := domain.Project{ID: "p1", Name: "Apollo", CreatedBy: "lea", CreatedAt: t0,
		Members: []domain.Member{{Subject: "lea", Lead: true}, {Subject: "uma"}}}
	p2 := domain.Project{ID: "p2", Name: "Zeus", CreatedBy: "adm", CreatedAt: t0}
	for _, p := range []domain.Project{p2, p1} {
		if err := st.CreateProject(ctx, p); err != nil {
			t.Fatalf("CreateProject(%s): %v", p.ID, err)
		}
	}
	if err := st.CreateProject(ctx, p1); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("duplicate project: got %v, want ErrConflict", err)
	}
	dupMember := domain.Project{ID: "p3", Name: "Hera", Members: []domain.Member{{Subject: "x"}, {Subject: "x"}}}
	if err := st.CreateProject(ctx, dupMember); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("project with a member twice: got %v, want ErrConflict", err)
	}
	if _, err := st.GetProject(ctx, "p3"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("a refused CreateProject left the project behind: GetProject = %v, want ErrNotFound", err)
	}
	got, err := st.GetProject(ctx, "p1")
	if err != nil || got.Name != "Apollo" || !got.CreatedAt.Equal(t0) || !got.IsLead("lea") || !got.IsMember("uma") || got.IsLead("uma") {
		t.Errorf("GetProject = %+v, %v; want p1 with lea leading", got, err)
	}
	if _, err := st.GetProject(ctx, "nope"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing project: got %v, want ErrNotFound", err)
	}
	all, err := st.ListProjects(ctx, ports.ProjectFilter{})
	if err != nil || len(all) != 2 || all[0].ID != "p2" || all[1].ID != "p1" {
		t.Errorf("ListProjects = %+v, %v; want p2, p1 (created together: by ID, descending)", all, err)
	}
	mine, err := st.ListProjects(ctx, ports.ProjectFilter{Member: "uma"})
	if err != nil || len(mine) != 1 || mine[0].ID != "p1" || len(mine[0].Members) != 2 {
		t.Errorf("ListProjects(uma) = %+v, %v; want p1 with both members", mine, err)
	}
	if none, err := st.ListProjects(ctx, ports.ProjectFilter{Member: "nobody"}); err != nil || len(none) != 0 {
		t.Errorf("ListProjects(nobody) = %+v, %v; want none", none, err)
	}
	if err := st.SetMembers(ctx, "p2", []domain.Member{{Subject: "uma", Lead: true}}); err != nil {
		t.Fatalf("SetMembers: %v", err)
	}
	mine, _ = st.ListProjects(ctx, ports.ProjectFilter{Member: "uma"})
	if len(mine) != 2 || !mine[0].IsLead("uma") {
		t.Errorf("after SetMembers: %+v, want uma leading p2", mine)
	}
	if err := st.SetMembers(ctx, "nope", nil); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("SetMembers on missing project: got %v, want ErrNotFound", err)
	}
	if err := st.SetMembers(ctx, "p2", []domain.Member{{Subject: "x"}, {Subject: "x"}}); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("duplicate member: got %v, want ErrConflict", err)
	}
	if p, _ := st.GetProject(ctx, "p2"); !p.IsLead("uma") || len(p.Members) != 1 {
		t.Errorf("a failed SetMembers changed the members: %+v", p.Members)
	}
}

func testCatalogAndPolicies(t *testing.T, st AccessStore) {
	ctx := ctxFor(t)
	if err := st.CreateTool(ctx, domain.Tool{Name: "fs.read", Server: "fs"}); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("tool of unregistered server: got %v, want ErrNotFound", err)
	}
	if servers, err := st.ListServers(ctx, ports.Page{}); err != nil || len(servers) != 0 {
		t.Errorf("ListServers(empty) = %+v, %v; want none", servers, err)
	}
	if _, err := st.GetServer(ctx, "fs"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("GetServer(missing): got %v, want ErrNotFound", err)
	}
	fs := domain.Server{Name: "fs", URL: "http://127.0.0.1:9/mcp", Endpoint: "http://127.0.0.1:9/upstream/mcp", Credential: "fs-token", CreatedAt: t0}
	if err := st.CreateServer(ctx, fs); err != nil {
		t.Fatalf("CreateServer: %v", err)
	}
	if got, err := st.GetServer(ctx, "fs"); err != nil || got != fs {
		t.Errorf("GetServer = %+v, %v; want %+v", got, err, fs)
	}
	if err := st.CreateServer(ctx, domain.Server{Name: "fs"}); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("duplicate server: got %v, want ErrConflict", err)
	}
	for _, tl := range []domain.Tool{{Name: "fs.write", Server: "fs"}, {Name: "fs.read", Server: "fs", ReadOnly: true, CreatedAt: t0}} {
		if err := st.CreateTool(ctx, tl); err != nil {
			t.Fatalf("CreateTool(%s): %v", tl.Name, err)
		}
	}
	if err := st.CreateTool(ctx, domain.Tool{Name: "fs.read", Server: "fs"}); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("duplicate tool: got %v, want ErrConflict", err)
	}
	tools, err := st.ListTools(ctx, ports.Page{})
	if err != nil || len(tools) != 2 || tools[0].Name != "fs.read" || !tools[0].ReadOnly || tools[1].ReadOnly || tools[0].Server != "fs" {
		t.Errorf("ListTools = %+v, %v; want fs.read (read-only), fs.write", tools, err)
	}
	if tl, err := st.GetTool(ctx, "fs.read"); err != nil || !tl.CreatedAt.Equal(t0) || !tl.ReadOnly || tl.SecondApprover {
		t.Errorf("GetTool = %+v, %v", tl, err)
	}
	shell := domain.Tool{Name: "fs.shell", Server: "fs", SecondApprover: true, CreatedAt: t0}
	if err := st.CreateTool(ctx, shell); err != nil {
		t.Fatalf("CreateTool(fs.shell): %v", err)
	}
	if tl, err := st.GetTool(ctx, "fs.shell"); err != nil || tl != shell {
		t.Errorf("GetTool(fs.shell) = %+v, %v; want %+v", tl, err, shell)
	}
	if _, err := st.GetTool(ctx, "nope"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing tool: got %v, want ErrNotFound", err)
	}
	// Rows stored before tool names were canonical (lower case) are found
	// by the canonical name; of two spellings, the one that is not
	// read-only answers, so a readonly session never runs a writing tool.
	for _, tl := range []domain.Tool{{Name: "Legacy.Tool", Server: "fs", ReadOnly: true}, {Name: "Dual.tool", Server: "fs", ReadOnly: true}, {Name: "dual.TOOL", Server: "fs"}} {
		if err := st.CreateTool(ctx, tl); err != nil {
			t.Fatalf("CreateTool(%s): %v", tl.Name, err)
		}
	}
	if tl, err := st.GetTool(ctx, "legacy.tool"); err != nil || !tl.ReadOnly {
		t.Errorf("GetTool(legacy.tool) = %+v, %v; want the row stored as Legacy.Tool", tl, err)
	}
	if tl, err := st.GetTool(ctx, "dual.tool"); err != nil || tl.ReadOnly {
		t.Errorf("GetTool(dual.tool) = %+v, %v; want the spelling that is not read-only", tl, err)
	}
	servers, err := st.ListServers(ctx, ports.Page{})
	if err != nil || len(servers) != 1 || servers[0] != fs {
		t.Errorf("ListServers = %+v, %v", servers, err)
	}
	// A server's upstream_auth is kept whole.
	gh := domain.Server{Name: "gh", URL: "https://gh.example/mcp", Endpoint: "https://gh.internal/mcp", CreatedAt: t0.Add(time.Second),
		UpstreamAuth: &domain.UpstreamAuth{Type: domain.UpstreamOAuth2, Issuer: "https://as.example/", ClientID: "agentauth",
			ClientSecret: "gh-secret", Scopes: []string{"repo", "read:user"}, Resource: "https://gh.example/mcp"}}
	if err := st.CreateServer(ctx, gh); err != nil {
		t.Fatalf("CreateServer(gh): %v", err)
	}
	if got, err := st.GetServer(ctx, "gh"); err != nil || !got.UpstreamAuth.Equal(gh.UpstreamAuth) || got.Credential != "" {
		t.Errorf("GetServer(gh) = %+v (upstream_auth %s), %v; want upstream_auth %s", got, got.UpstreamAuth, err, gh.UpstreamAuth)
	}
	gh.UpstreamAuth = &domain.UpstreamAuth{Type: domain.UpstreamTokenExchange, Audience: "gh-api"}
	if err := st.UpdateServer(ctx, gh); err != nil {
		t.Fatalf("UpdateServer(gh): %v", err)
	}
	if got, err := st.GetServer(ctx, "gh"); err != nil || !got.UpstreamAuth.Equal(gh.UpstreamAuth) {
		t.Errorf("GetServer(gh) after UpdateServer = upstream_auth %s, %v; want %s", got.UpstreamAuth, err, gh.UpstreamAuth)
	}
	gh.UpstreamAuth = nil
	if err := st.UpdateServer(ctx, gh); err != nil {
		t.Fatalf("UpdateServer(gh): %v", err)
	}
	if got, err := st.GetServer(ctx, "gh"); err != nil || got.UpstreamAuth != nil {
		t.Errorf("GetServer(gh) after its upstream_auth was removed = %s, %v; want none", got.UpstreamAuth, err)
	}
	if err := st.DeleteServer(ctx, "gh"); err != nil {
		t.Fatalf("DeleteServer(gh): %v", err)
	}

	// Every change to the rules moves the policy version; a refused one
	// does not.
	version := func() int64 {
		t.Helper()
		v, err := st.PolicyVersion(ctx)
		if err != nil {
			t.Fatalf("PolicyVersion: %v", err)
		}
		return v
	}
	v0 := version()
	r1 := domain.PolicyRule{ID: "r1", Effect: domain.EffectAllow, Tool: "*", Scope: domain.ScopeRole, Value: "USER", CreatedBy: "adm", CreatedAt: t0}
	r2 := domain.PolicyRule{ID: "r2", Effect: domain.EffectDeny, Tool: "fs.write", Scope: domain.ScopeSubject, Value: "uma",
		When: `args.env == "prod" && agent.depth > 0`, CreatedAt: t0.Add(time.Second)}
	for _, r := range []domain.PolicyRule{r2, r1} {
		if err := st.CreatePolicy(ctx, r); err != nil {
			t.Fatalf("CreatePolicy(%s): %v", r.ID, err)
		}
	}
	v1 := version()
	if v1 == v0 {
		t.Errorf("policy version %d unchanged after two new rules", v1)
	}
	if err := st.CreatePolicy(ctx, r1); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("duplicate policy: got %v, want ErrConflict", err)
	}
	if v := version(); v != v1 {
		t.Errorf("policy version moved from %d to %d on a refused insert", v1, v)
	}
	rules, err := st.ListPolicies(ctx, ports.Page{})
	if err != nil || len(rules) != 2 || rules[0] != r2 || rules[1] != r1 {
		t.Errorf("ListPolicies = %+v, %v; want r2, r1 newest first", rules, err)
	}
	if err := st.DeletePolicy(ctx, "r2"); err != nil {
		t.Fatalf("DeletePolicy: %v", err)
	}
	v2 := version()
	if v2 == v1 {
		t.Errorf("policy version %d unchanged after a delete", v2)
	}
	if err := st.DeletePolicy(ctx, "r2"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("delete twice: got %v, want ErrNotFound", err)
	}
	if rules, _ := st.ListPolicies(ctx, ports.Page{}); len(rules) != 1 || rules[0] != r1 {
		t.Errorf("after delete, ListPolicies = %+v, want r1", rules)
	}
}

func testAgentsAndToolCalls(t *testing.T, st AccessStore) {
	ctx := ctxFor(t)
	root := domain.Agent{ID: "a0", Name: "notes-agent", Session: "s1", CreatedBy: "uma", CreatedAt: t0}
	child := domain.Agent{ID: "a1", Name: "Zoë's <helper>", Session: "s1", Parent: "a0", Depth: 1, CreatedAt: t0.Add(time.Second),
		Limits: domain.Limits{Tools: []string{}, ReadOnly: true, Approval: true}}
	grandchild := domain.Agent{ID: "a2", Session: "s1", Parent: "a1", Depth: 2, CreatedAt: t0.Add(2 * time.Second),
		Limits: domain.Limits{Tools: []string{"fs.read", "git.log"}}}
	other := domain.Agent{ID: "b0", Session: "s2", CreatedAt: t0}
	for _, a := range []domain.Agent{root, child, grandchild, other} {
		if err := st.CreateAgent(ctx, a); err != nil {
			t.Fatalf("CreateAgent(%s): %v", a.ID, err)
		}
	}
	if err := st.CreateAgent(ctx, root); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("duplicate agent: got %v, want ErrConflict", err)
	}
	agents, err := st.ListAgents(ctx, "s1", ports.Page{})
	if err != nil || len(agents) != 3 {
		t.Fatalf("ListAgents(s1) = %+v, %v; want 3 agents", agents, err)
	}
	// Newest first. nil Tools (every tool) and empty Tools (no tool) must
	// stay different.
	if agents[2].Limits.Tools != nil || agents[1].Limits.Tools == nil || len(agents[1].Limits.Tools) != 0 ||
		!agents[1].Limits.ReadOnly || !agents[1].Limits.Approval || agents[1].Parent != "a0" || agents[1].Depth != 1 || agents[1].Name != child.Name || agents[0].Name != "" ||
		!slices.Equal(agents[0].Limits.Tools, []string{"fs.read", "git.log"}) {
		t.Errorf("ListAgents(s1) = %+v", agents)
	}
	if a, err := st.GetAgent(ctx, "a0"); err != nil || a.CreatedBy != "uma" || !a.CreatedAt.Equal(t0) || a.Name != "notes-agent" {
		t.Errorf("GetAgent = %+v, %v", a, err)
	}
	if _, err := st.GetAgent(ctx, "nope"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing agent: got %v, want ErrNotFound", err)
	}
	if none, err := st.ListAgents(ctx, "s9", ports.Page{}); err != nil || len(none) != 0 {
		t.Errorf("ListAgents(s9) = %+v, %v; want none", none, err)
	}
	for session, want := range map[string]int{"s1": 2, "s2": 0, "s9": 0} {
		if n, err := st.CountSubAgents(ctx, session); err != nil || n != want {
			t.Errorf("CountSubAgents(%s) = %d, %v; want %d", session, n, err, want)
		}
	}

	call := domain.ToolCall{ID: "c1", Session: "s1", Agent: "a0", Tool: "fs.write", Status: domain.CallPending, RequestedBy: "uma", CreatedAt: t0,
		Decision: domain.ToolDecision{Effect: domain.EffectAsk, Reason: domain.ReasonModeAsk, Rule: "r1", Message: "ask"}}
	allowed := domain.ToolCall{ID: "c2", Session: "s2", Agent: "b0", Tool: "fs.read", Status: domain.CallAllowed, RequestedBy: "bob", CreatedAt: t0.Add(time.Second),
		Decision: domain.ToolDecision{Effect: domain.EffectAllow, Message: "ok"}}
	for _, c := range []domain.ToolCall{call, allowed} {
		if err := st.CreateToolCall(ctx, c); err != nil {
			t.Fatalf("CreateToolCall(%s): %v", c.ID, err)
		}
	}
	if err := st.CreateToolCall(ctx, call); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("duplicate call: got %v, want ErrConflict", err)
	}
	if got, err := st.GetToolCall(ctx, "c1"); err != nil || !sameCall(got, call) {
		t.Errorf("GetToolCall = %+v, %v; want %+v", got, err, call)
	}
	got, err := st.ResolveToolCall(ctx, "c1", domain.CallApproved, "lea", t0.Add(time.Minute))
	if err != nil || got.Status != domain.CallApproved || got.ResolvedBy != "lea" || !got.ResolvedAt.Equal(t0.Add(time.Minute)) || got.Tool != "fs.write" {
		t.Errorf("ResolveToolCall = %+v, %v", got, err)
	}
	if _, err := st.ResolveToolCall(ctx, "c1", domain.CallRejected, "x", t0); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("second resolution: got %v, want ErrConflict", err)
	}
	if _, err := st.ResolveToolCall(ctx, "nope", domain.CallRejected, "x", t0); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing call: got %v, want ErrNotFound", err)
	}
	if c, err := st.GetToolCall(ctx, "c1"); err != nil || c.Status != domain.CallApproved || c.Decision.Reason != domain.ReasonModeAsk {
		t.Errorf("GetToolCall after resolve = %+v, %v", c, err)
	}
	if _, err := st.GetToolCall(ctx, "nope"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing call: got %v, want ErrNotFound", err)
	}
	testUseApproval(t, st)
	tests := []struct {
		f    ports.ToolCallFilter
		want []string
	}{
		{ports.ToolCallFilter{}, []string{"c4", "c3", "c2", "c1"}},
		{ports.ToolCallFilter{Page: ports.Page{Limit: 1}}, []string{"c4"}},
		{ports.ToolCallFilter{Session: "s1", Status: domain.CallApproved, Page: ports.Page{Limit: 5}}, []string{"c1"}},
		{ports.ToolCallFilter{Session: "s2"}, []string{"c2"}},
		{ports.ToolCallFilter{Status: domain.CallPending}, nil},
	}
	for _, tt := range tests {
		list, err := st.ListToolCalls(ctx, tt.f)
		var ids []string
		for _, c := range list {
			ids = append(ids, c.ID)
		}
		if err != nil || !slices.Equal(ids, tt.want) {
			t.Errorf("ListToolCalls(%+v) = %v, %v; want %v", tt.f, ids, err, tt.want)
		}
	}
	testWaiters(t, st)
}

func testSessionsByProject(t *testing.T, st AccessStore) {
	ctx := ctxFor(t)
	for i, s := range []domain.Session{
		{ID: "s1", Owner: "lea", Project: "", Mode: domain.ModeAsk, State: domain.SessionActive},
		{ID: "s2", Owner: "uma", Project: "p1", Mode: domain.ModeAsk, State: domain.SessionActive},
		{ID: "s3", Owner: "uma", Project: "p2", Mode: domain.ModeAsk, State: domain.SessionActive},
		{ID: "s4", Owner: "bob", Project: "p3", Mode: domain.ModeAsk, State: domain.SessionActive},
	} {
		s.CreatedAt = t0.Add(time.Duration(i) * time.Second)
		if err := st.CreateSession(ctx, s); err != nil {
			t.Fatalf("CreateSession(%s): %v", s.ID, err)
		}
	}
	tests := []struct {
		f    ports.SessionFilter
		want []string
	}{
		{ports.SessionFilter{}, []string{"s4", "s3", "s2", "s1"}},
		{ports.SessionFilter{Owner: "lea"}, []string{"s1"}},
		{ports.SessionFilter{Owner: "lea", Projects: []string{"p1", "p3"}}, []string{"s4", "s2", "s1"}},
		{ports.SessionFilter{Projects: []string{"p2"}}, []string{"s3"}},
	}
	for _, tt := range tests {
		list, err := st.ListSessions(ctx, tt.f)
		var ids []string
		for _, s := range list {
			ids = append(ids, s.ID)
		}
		if err != nil || !slices.Equal(ids, tt.want) {
			t.Errorf("ListSessions(%+v) = %v, %v; want %v", tt.f, ids, err, tt.want)
		}
	}
	if err := st.SetSessionMode(ctx, "s2", domain.ModeReadonly); err != nil {
		t.Fatalf("SetSessionMode: %v", err)
	}
	if s, _ := st.GetSession(ctx, "s2"); s.Mode != domain.ModeReadonly {
		t.Errorf("mode = %s, want readonly", s.Mode)
	}
	if err := st.SetSessionMode(ctx, "nope", domain.ModeAuto); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing session: got %v, want ErrNotFound", err)
	}
}

// testUseApproval: a gateway call keeps its arguments' hash, and its
// approval is used once; a call that is pending, denied or used refuses.
// testWaiters: a call the gateway holds keeps who waits and until when;
// its waiter withdraws it once, and a withdrawn call is approved no more.
func testWaiters(t *testing.T, st AccessStore) {
	ctx := ctxFor(t)
	held := domain.ToolCall{ID: "c5", Session: "s3", Agent: "g0", Tool: "fs.write", Status: domain.CallPending, RequestedBy: "agent:g0",
		CreatedAt: t0.Add(4 * time.Second), Decision: domain.ToolDecision{Effect: domain.EffectAsk, Reason: domain.ReasonPolicyAsk, Message: "ask"},
		Waiter: "w-c5", WaitUntil: t0.Add(5 * time.Minute)}
	other := held
	other.ID, other.Waiter = "c6", "w-c6"
	for _, c := range []domain.ToolCall{held, other} {
		if err := st.CreateToolCall(ctx, c); err != nil {
			t.Fatalf("CreateToolCall(%s): %v", c.ID, err)
		}
	}
	if got, err := st.GetToolCall(ctx, "c5"); err != nil || !sameCall(got, held) {
		t.Errorf("GetToolCall(c5) = %+v, %v; want %+v", got, err, held)
	}
	got, err := st.WithdrawWaiting(ctx, "w-c5", "client gone", t0.Add(time.Minute))
	if err != nil || got.ID != "c5" || got.Status != domain.CallWithdrawn || got.ResolvedBy != "client gone" || !got.ResolvedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("WithdrawWaiting(w-c5) = %+v, %v", got, err)
	}
	for _, w := range []string{"w-c5", "", "w-none"} {
		if _, err := st.WithdrawWaiting(ctx, w, "x", t0); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("WithdrawWaiting(%q) again: got %v, want ErrNotFound", w, err)
		}
	}
	if _, err := st.ResolveToolCall(ctx, "c5", domain.CallApproved, "lea", t0.Add(2*time.Minute)); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("approving a withdrawn call: got %v, want ErrConflict", err)
	}
	if c, err := st.GetToolCall(ctx, "c6"); err != nil || c.Status != domain.CallPending {
		t.Errorf("another waiter's call: %+v, %v; want it pending", c, err)
	}
}

func testUseApproval(t *testing.T, st AccessStore) {
	ctx := ctxFor(t)
	// Canonical arguments as an approver reads them: any Unicode, escapes
	// of control characters, the largest a store keeps.
	args := []byte(`{"mode":1,"note":"naïve \u0000 ` + "\u2028" + `","path":"` + strings.Repeat("x", domain.MaxArgumentsBytes-40) + `"}`)
	gw := domain.ToolCall{ID: "c3", Session: "s3", Agent: "g0", Tool: "fs.write", Status: domain.CallPending, RequestedBy: "agent:g0",
		CreatedAt: t0.Add(2 * time.Second), Arguments: args, ArgsHash: domain.ArgumentsHash(args),
		Decision: domain.ToolDecision{Effect: domain.EffectAsk, Reason: domain.ReasonPolicyAsk, Rule: "r2", Message: "ask"}}
	denied := domain.ToolCall{ID: "c4", Session: "s3", Agent: "g0", Tool: "fs.rm", Status: domain.CallDenied, RequestedBy: "agent:g0",
		CreatedAt: t0.Add(3 * time.Second), Decision: domain.ToolDecision{Effect: domain.EffectDeny, Reason: domain.ReasonPolicyDeny}}
	for _, c := range []domain.ToolCall{gw, denied} {
		if err := st.CreateToolCall(ctx, c); err != nil {
			t.Fatalf("CreateToolCall(%s): %v", c.ID, err)
		}
	}
	if got, err := st.GetToolCall(ctx, "c3"); err != nil || !sameCall(got, gw) {
		t.Errorf("GetToolCall(c3) = %s, %v; want %s", short(got), err, short(gw))
	}
	used := t0.Add(5 * time.Minute)
	if err := st.UseApproval(ctx, "c3", used); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("UseApproval(pending): got %v, want ErrConflict", err)
	}
	if _, err := st.ResolveToolCall(ctx, "c3", domain.CallApproved, "lea", t0.Add(time.Minute)); err != nil {
		t.Fatalf("ResolveToolCall(c3): %v", err)
	}
	tests := []struct {
		id   string
		want error
	}{
		{"c3", nil},
		{"c3", domain.ErrConflict}, // used once
		{"c4", domain.ErrConflict},
		{"nope", domain.ErrNotFound},
	}
	for _, tt := range tests {
		if err := st.UseApproval(ctx, tt.id, used); !errors.Is(err, tt.want) {
			t.Errorf("UseApproval(%s) = %v, want %v", tt.id, err, tt.want)
		}
	}
	if got, err := st.GetToolCall(ctx, "c3"); err != nil || !got.UsedAt.Equal(used) || got.ArgsHash != gw.ArgsHash ||
		!bytes.Equal(got.Arguments, args) || got.Status != domain.CallApproved {
		t.Errorf("GetToolCall(c3) after use = %s, %v; want used at %v", short(got), err, used)
	}
}

// sameCall compares two tool calls field by field, the arguments byte by
// byte (none stored reads as nil).
func sameCall(a, b domain.ToolCall) bool {
	if !bytes.Equal(a.Arguments, b.Arguments) || (a.Arguments == nil) != (b.Arguments == nil) {
		return false
	}
	a.Arguments, b.Arguments = nil, nil
	return reflect.DeepEqual(a, b)
}

// short prints a call with the length and hash of its arguments instead
// of their bytes.
func short(c domain.ToolCall) string {
	args := fmt.Sprintf("%d bytes of arguments, SHA-256 %s", len(c.Arguments), domain.ArgumentsHash(c.Arguments))
	c.Arguments = nil
	return fmt.Sprintf("%+v with %s", c, args)
}

// testCatalogChanges: servers and tools are changed and removed, whole;
// never while a call of theirs waits for approval, nor a server that still
// has tools; a missing one is ErrNotFound.
func testCatalogChanges(t *testing.T, st AccessStore) {
	ctx := ctxFor(t)
	fs := domain.Server{Name: "fs", URL: "http://127.0.0.1:9/mcp", CreatedAt: t0}
	git := domain.Server{Name: "git", URL: "http://127.0.0.1:8/mcp", CreatedAt: t0}
	for _, sv := range []domain.Server{fs, git} {
		if err := st.CreateServer(ctx, sv); err != nil {
			t.Fatalf("CreateServer(%s): %v", sv.Name, err)
		}
	}
	write := domain.Tool{Name: "fs.write", Server: "fs", CreatedAt: t0}
	legacy := domain.Tool{Name: "Fs.Legacy", Server: "fs", ReadOnly: true, CreatedAt: t0}
	for _, tl := range []domain.Tool{write, legacy} {
		if err := st.CreateTool(ctx, tl); err != nil {
			t.Fatalf("CreateTool(%s): %v", tl.Name, err)
		}
	}

	moved := domain.Server{Name: "fs", URL: "https://fs.example/mcp", Endpoint: "https://fs.internal/mcp", Credential: "fs-token", CreatedAt: t0.Add(time.Hour)}
	if err := st.UpdateServer(ctx, moved); err != nil {
		t.Fatalf("UpdateServer: %v", err)
	}
	moved.CreatedAt = t0 // kept
	if got, err := st.GetServer(ctx, "fs"); err != nil || got != moved {
		t.Errorf("GetServer after UpdateServer = %+v, %v; want %+v", got, err, moved)
	}
	changed := domain.Tool{Name: "fs.write", Server: "git", ReadOnly: true, SecondApprover: true, Description: "Write a file.\nNaïve: ⚠", CreatedAt: t0.Add(time.Hour)}
	if err := st.UpdateTool(ctx, changed); err != nil {
		t.Fatalf("UpdateTool: %v", err)
	}
	changed.CreatedAt = t0
	if got, err := st.GetTool(ctx, "fs.write"); err != nil || got != changed {
		t.Errorf("GetTool after UpdateTool = %+v, %v; want %+v", got, err, changed)
	}
	if err := st.UpdateTool(ctx, domain.Tool{Name: "fs.legacy", Server: "fs", Description: "old spelling"}); err != nil {
		t.Errorf("UpdateTool(fs.legacy) of a row stored as Fs.Legacy: %v", err)
	}
	if got, err := st.GetTool(ctx, "fs.legacy"); err != nil || got.Description != "old spelling" || got.ReadOnly {
		t.Errorf("GetTool(fs.legacy) = %+v, %v; want it changed", got, err)
	}
	missing := []struct {
		name string
		err  error
	}{
		{"UpdateServer(nope)", st.UpdateServer(ctx, domain.Server{Name: "nope", URL: "http://x"})},
		{"DeleteServer(nope)", st.DeleteServer(ctx, "nope")},
		{"UpdateTool(nope)", st.UpdateTool(ctx, domain.Tool{Name: "nope", Server: "fs"})},
		{"UpdateTool onto a server not registered", st.UpdateTool(ctx, domain.Tool{Name: "fs.write", Server: "nope"})},
		{"DeleteTool(nope)", st.DeleteTool(ctx, "nope")},
	}
	for _, m := range missing {
		if !errors.Is(m.err, domain.ErrNotFound) {
			t.Errorf("%s = %v, want ErrNotFound", m.name, m.err)
		}
	}

	// A call of fs.write waits for approval: neither it nor its server
	// (git now) changes until it is resolved.
	pending := domain.ToolCall{ID: "c1", Session: "s1", Agent: "a0", Tool: "fs.write", Status: domain.CallPending, RequestedBy: "uma", CreatedAt: t0,
		Decision: domain.ToolDecision{Effect: domain.EffectAsk, Reason: domain.ReasonPolicyAsk}}
	if err := st.CreateToolCall(ctx, pending); err != nil {
		t.Fatal(err)
	}
	held := []struct {
		name string
		err  error
	}{
		{"UpdateTool", st.UpdateTool(ctx, domain.Tool{Name: "fs.write", Server: "git"})},
		{"DeleteTool", st.DeleteTool(ctx, "fs.write")},
		{"UpdateServer", st.UpdateServer(ctx, domain.Server{Name: "git", URL: "http://127.0.0.1:7/mcp"})},
		{"DeleteServer with its tools", st.DeleteServer(ctx, "git")},
		{"DeleteServer with tools", st.DeleteServer(ctx, "fs")},
	}
	for _, h := range held {
		if !errors.Is(h.err, domain.ErrConflict) {
			t.Errorf("%s = %v, want ErrConflict", h.name, h.err)
		}
	}
	if got, _ := st.GetTool(ctx, "fs.write"); got != changed {
		t.Errorf("a refused change changed the tool: %+v", got)
	}
	if got, _ := st.GetServer(ctx, "git"); got != git {
		t.Errorf("a refused change changed the server: %+v", got)
	}
	// Another server's tools are free.
	if err := st.DeleteTool(ctx, "fs.legacy"); err != nil {
		t.Errorf("DeleteTool(fs.legacy): %v", err)
	}
	if _, err := st.ResolveToolCall(ctx, "c1", domain.CallRejected, "lea", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteTool(ctx, "fs.write"); err != nil {
		t.Fatalf("DeleteTool once the call is resolved: %v", err)
	}
	if _, err := st.GetTool(ctx, "fs.write"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("GetTool after DeleteTool = %v, want ErrNotFound", err)
	}
	for _, name := range []string{"git", "fs"} {
		if err := st.DeleteServer(ctx, name); err != nil {
			t.Fatalf("DeleteServer(%s) without tools: %v", name, err)
		}
	}
	if list, err := st.ListServers(ctx, ports.Page{}); err != nil || len(list) != 0 {
		t.Errorf("ListServers after deleting both = %+v, %v", list, err)
	}
}
