package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC)

func TestProjectStore(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	p1 := domain.Project{ID: "p1", Name: "Apollo", CreatedBy: "lea", CreatedAt: t0,
		Members: []domain.Member{{Subject: "lea", Lead: true}, {Subject: "uma"}}}
	p2 := domain.Project{ID: "p2", Name: "Zeus", CreatedBy: "adm", CreatedAt: t0}
	for _, p := range []domain.Project{p2, p1} {
		if err := st.CreateProject(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CreateProject(ctx, p1); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("duplicate project: got %v, want ErrConflict", err)
	}
	got, err := st.GetProject(ctx, "p1")
	if err != nil || got.Name != "Apollo" || !got.CreatedAt.Equal(t0) || !got.IsLead("lea") || !got.IsMember("uma") || got.IsLead("uma") {
		t.Errorf("GetProject = %+v, %v; want p1 with lea leading", got, err)
	}
	if _, err := st.GetProject(ctx, "nope"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing project: got %v, want ErrNotFound", err)
	}
	all, _ := st.ListProjects(ctx, ports.ProjectFilter{})
	if len(all) != 2 || all[0].ID != "p1" || all[1].ID != "p2" {
		t.Errorf("ListProjects = %+v, want p1, p2", all)
	}
	mine, _ := st.ListProjects(ctx, ports.ProjectFilter{Member: "uma"})
	if len(mine) != 1 || mine[0].ID != "p1" || len(mine[0].Members) != 2 {
		t.Errorf("ListProjects(uma) = %+v, want p1 with both members", mine)
	}
	if err := st.SetMembers(ctx, "p2", []domain.Member{{Subject: "uma", Lead: true}}); err != nil {
		t.Fatal(err)
	}
	mine, _ = st.ListProjects(ctx, ports.ProjectFilter{Member: "uma"})
	if len(mine) != 2 || !mine[1].IsLead("uma") {
		t.Errorf("after SetMembers: %+v, want uma leading p2", mine)
	}
	if err := st.SetMembers(ctx, "nope", nil); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("SetMembers on missing project: got %v, want ErrNotFound", err)
	}
	if err := st.SetMembers(ctx, "p2", []domain.Member{{Subject: "x"}, {Subject: "x"}}); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("duplicate member: got %v, want ErrConflict", err)
	}
	if p, _ := st.GetProject(ctx, "p2"); !p.IsLead("uma") {
		t.Errorf("a failed SetMembers changed the members: %+v", p.Members)
	}
}

func TestCatalogAndPolicyStore(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	if err := st.CreateTool(ctx, domain.Tool{Name: "fs.read", Server: "fs"}); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("tool of unregistered server: got %v, want ErrNotFound", err)
	}
	if err := st.CreateServer(ctx, domain.Server{Name: "fs", URL: "http://127.0.0.1:9/mcp", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateServer(ctx, domain.Server{Name: "fs"}); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("duplicate server: got %v, want ErrConflict", err)
	}
	for _, tl := range []domain.Tool{{Name: "fs.write", Server: "fs"}, {Name: "fs.read", Server: "fs", ReadOnly: true, CreatedAt: t0}} {
		if err := st.CreateTool(ctx, tl); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CreateTool(ctx, domain.Tool{Name: "fs.read", Server: "fs"}); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("duplicate tool: got %v, want ErrConflict", err)
	}
	tools, _ := st.ListTools(ctx)
	if len(tools) != 2 || tools[0].Name != "fs.read" || !tools[0].ReadOnly || tools[1].ReadOnly {
		t.Errorf("ListTools = %+v", tools)
	}
	if tl, err := st.GetTool(ctx, "fs.read"); err != nil || !tl.CreatedAt.Equal(t0) {
		t.Errorf("GetTool = %+v, %v", tl, err)
	}
	if _, err := st.GetTool(ctx, "nope"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing tool: got %v, want ErrNotFound", err)
	}
	servers, _ := st.ListServers(ctx)
	if len(servers) != 1 || servers[0].URL != "http://127.0.0.1:9/mcp" {
		t.Errorf("ListServers = %+v", servers)
	}

	r1 := domain.PolicyRule{ID: "r1", Effect: domain.EffectAllow, Tool: "*", Scope: domain.ScopeRole, Value: "USER", CreatedBy: "adm", CreatedAt: t0}
	r2 := domain.PolicyRule{ID: "r2", Effect: domain.EffectDeny, Tool: "fs.write", Scope: domain.ScopeSubject, Value: "uma", CreatedAt: t0.Add(time.Second)}
	for _, r := range []domain.PolicyRule{r2, r1} {
		if err := st.CreatePolicy(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CreatePolicy(ctx, r1); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("duplicate policy: got %v, want ErrConflict", err)
	}
	rules, _ := st.ListPolicies(ctx)
	if len(rules) != 2 || rules[0] != r1 || rules[1] != r2 {
		t.Errorf("ListPolicies = %+v, want r1, r2 oldest first", rules)
	}
	if err := st.DeletePolicy(ctx, "r2"); err != nil {
		t.Fatal(err)
	}
	if err := st.DeletePolicy(ctx, "r2"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("delete twice: got %v, want ErrNotFound", err)
	}
}

func TestAgentAndToolCallStoreSurviveReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentauth.db")
	st := open(t, path)
	root := domain.Agent{ID: "a0", Session: "s1", CreatedBy: "uma", CreatedAt: t0}
	child := domain.Agent{ID: "a1", Session: "s1", Parent: "a0", Depth: 1, CreatedAt: t0.Add(time.Second),
		Limits: domain.Limits{Tools: []string{}, ReadOnly: true, Approval: true}}
	for _, a := range []domain.Agent{root, child} {
		if err := st.CreateAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CreateAgent(ctx, root); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("duplicate agent: got %v, want ErrConflict", err)
	}
	call := domain.ToolCall{ID: "c1", Session: "s1", Agent: "a0", Tool: "fs.write", Status: domain.CallPending, RequestedBy: "uma", CreatedAt: t0,
		Decision: domain.ToolDecision{Effect: domain.EffectAsk, Reason: domain.ReasonModeAsk, Message: "ask"}}
	if err := st.CreateToolCall(ctx, call); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateToolCall(ctx, call); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("duplicate call: got %v, want ErrConflict", err)
	}

	st2 := open(t, path) // a second handle sees everything committed by the first
	agents, err := st2.ListAgents(ctx, "s1")
	if err != nil || len(agents) != 2 || agents[0].Limits.Tools != nil || agents[1].Limits.Tools == nil || len(agents[1].Limits.Tools) != 0 ||
		!agents[1].Limits.ReadOnly || !agents[1].Limits.Approval || agents[1].Parent != "a0" || agents[1].Depth != 1 {
		t.Errorf("ListAgents = %+v, %v", agents, err)
	}
	if a, err := st2.GetAgent(ctx, "a0"); err != nil || a.CreatedBy != "uma" || !a.CreatedAt.Equal(t0) {
		t.Errorf("GetAgent = %+v, %v", a, err)
	}
	if _, err := st2.GetAgent(ctx, "nope"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing agent: got %v, want ErrNotFound", err)
	}
	got, err := st2.ResolveToolCall(ctx, "c1", domain.CallApproved, "lea", t0.Add(time.Minute))
	if err != nil || got.Status != domain.CallApproved || got.ResolvedBy != "lea" || !got.ResolvedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("ResolveToolCall = %+v, %v", got, err)
	}
	if _, err := st.ResolveToolCall(ctx, "c1", domain.CallRejected, "x", t0); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("second resolution: got %v, want ErrConflict", err)
	}
	if _, err := st.ResolveToolCall(ctx, "nope", domain.CallRejected, "x", t0); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing call: got %v, want ErrNotFound", err)
	}
	if c, err := st.GetToolCall(ctx, "c1"); err != nil || c.Status != domain.CallApproved || c.Decision.Reason != domain.ReasonModeAsk {
		t.Errorf("GetToolCall = %+v, %v", c, err)
	}
	if _, err := st.GetToolCall(ctx, "nope"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing call: got %v, want ErrNotFound", err)
	}
	for _, tt := range []struct {
		f    ports.ToolCallFilter
		want int
	}{{ports.ToolCallFilter{}, 1}, {ports.ToolCallFilter{Session: "s1", Status: domain.CallApproved, Limit: 5}, 1}, {ports.ToolCallFilter{Status: domain.CallPending}, 0}} {
		if list, err := st.ListToolCalls(ctx, tt.f); err != nil || len(list) != tt.want {
			t.Errorf("ListToolCalls(%+v) = %d, %v; want %d", tt.f, len(list), err, tt.want)
		}
	}
}

func TestSessionsByOwnerOrProject(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	for i, s := range []domain.Session{
		{ID: "s1", Owner: "lea", Project: "", Mode: domain.ModeAsk, State: domain.SessionActive},
		{ID: "s2", Owner: "uma", Project: "p1", Mode: domain.ModeAsk, State: domain.SessionActive},
		{ID: "s3", Owner: "uma", Project: "p2", Mode: domain.ModeAsk, State: domain.SessionActive},
		{ID: "s4", Owner: "bob", Project: "p3", Mode: domain.ModeAsk, State: domain.SessionActive},
	} {
		s.CreatedAt = t0.Add(time.Duration(i) * time.Second)
		if err := st.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
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
		t.Fatal(err)
	}
	if s, _ := st.GetSession(ctx, "s2"); s.Mode != domain.ModeReadonly {
		t.Errorf("mode = %s, want readonly", s.Mode)
	}
	if err := st.SetSessionMode(ctx, "nope", domain.ModeAuto); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing session: got %v, want ErrNotFound", err)
	}
}
