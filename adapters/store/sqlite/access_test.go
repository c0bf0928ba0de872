package sqlite_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/porttest"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC)

func TestAgentAndToolCallStoreSurviveReopen(t *testing.T) {
	ctx := porttest.Context(t)
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

	st2 := open(t, path)                                   // a second handle sees everything committed by the first
	agents, err := st2.ListAgents(ctx, "s1", ports.Page{}) // newest first
	if err != nil || len(agents) != 2 || agents[1].Limits.Tools != nil || agents[0].Limits.Tools == nil || len(agents[0].Limits.Tools) != 0 ||
		!agents[0].Limits.ReadOnly || !agents[0].Limits.Approval || agents[0].Parent != "a0" || agents[0].Depth != 1 {
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
	}{{ports.ToolCallFilter{}, 1}, {ports.ToolCallFilter{Session: "s1", Status: domain.CallApproved, Page: ports.Page{Limit: 5}}, 1}, {ports.ToolCallFilter{Status: domain.CallPending}, 0}} {
		if list, err := st.ListToolCalls(ctx, tt.f); err != nil || len(list) != tt.want {
			t.Errorf("ListToolCalls(%+v) = %d, %v; want %d", tt.f, len(list), err, tt.want)
		}
	}
}
