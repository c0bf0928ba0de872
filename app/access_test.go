package app_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
)

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

var now = fixedClock{time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)}

func authorizer(t *testing.T) *domain.Authorizer {
	t.Helper()
	a, err := domain.NewAuthorizer(nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

var (
	uma    = domain.Principal{Subject: "uma", Roles: []domain.Role{domain.RoleUser}}
	lea    = domain.Principal{Subject: "lea", Roles: []domain.Role{domain.RoleLead}}
	admin  = domain.Principal{Subject: "adm", Roles: []domain.Role{domain.RoleAdmin}}
	aud    = domain.Principal{Subject: "aud", Roles: []domain.Role{domain.RoleAuditor}}
	apollo = domain.Project{ID: "p1", Name: "Apollo", Members: []domain.Member{{Subject: "lea", Lead: true}, {Subject: "uma"}}}
)

type fixture struct {
	sessions *mocks.MockSessionStore
	settings *mocks.MockSettingsStore
	projects *mocks.MockProjectStore
	modes    *mocks.MockSessionModeStore
	agents   *mocks.MockAgentStore
	calls    *mocks.MockToolCallStore
	catalog  *mocks.MockCatalogStore
	policies *mocks.MockPolicyStore
	audit    *mocks.MockAuditStore
	authz    *domain.Authorizer
}

func newFixture(t *testing.T) fixture {
	c := gomock.NewController(t)
	return fixture{mocks.NewMockSessionStore(c), mocks.NewMockSettingsStore(c), mocks.NewMockProjectStore(c), mocks.NewMockSessionModeStore(c),
		mocks.NewMockAgentStore(c), mocks.NewMockToolCallStore(c), mocks.NewMockCatalogStore(c), mocks.NewMockPolicyStore(c),
		mocks.NewMockAuditStore(c), authorizer(t)}
}

func (f fixture) sessionsUC() *app.Sessions {
	return app.NewSessions(f.sessions, f.settings, f.projects, f.modes, f.authz, now)
}

func (f fixture) memberships(subject string, projects ...domain.Project) {
	f.projects.EXPECT().ListProjects(gomock.Any(), ports.ProjectFilter{Member: subject}).Return(projects, nil).AnyTimes()
}

// firstPage is what a list without ?limit= asks of the store: the default
// page and one more item, which tells whether there is a next page.
var firstPage = ports.Page{Limit: app.DefaultPageSize + 1}

func TestSessionsListByScope(t *testing.T) {
	tests := []struct {
		name string
		p    domain.Principal
		want ports.SessionFilter
	}{
		{"USER: own only, even in a project", uma, ports.SessionFilter{Owner: "uma", Page: firstPage}},
		{"LEAD: own and led projects", lea, ports.SessionFilter{Owner: "lea", Projects: []string{"p1"}, Page: firstPage}},
		{"AUDITOR: all", aud, ports.SessionFilter{Page: firstPage}},
		{"ADMIN: all", admin, ports.SessionFilter{Page: firstPage}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.memberships(tt.p.Subject, apollo)
			f.sessions.EXPECT().ListSessions(gomock.Any(), gomock.Eq(tt.want)).Return([]domain.Session{}, nil)
			if _, err := f.sessionsUC().List(context.Background(), tt.p, app.PageRequest{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSessionsCreateOnlyInOwnProjects(t *testing.T) {
	other := domain.Project{ID: "p2", Name: "Other"}
	tests := []struct {
		name    string
		p       domain.Principal
		project domain.Project
		code    string
	}{
		{"member creates", uma, apollo, ""},
		{"non-member refused", uma, other, domain.ReasonNotProjectMember},
		{"admin anywhere", admin, other, ""},
		// A project that does not exist is refused like one the caller does
		// not belong to: a 404 here would tell a USER which IDs exist.
		{"non-member refused alike when the project is missing", uma, domain.Project{ID: "p404"}, domain.ReasonNotProjectMember},
		{"admin: missing project not found", admin, domain.Project{ID: "p404"}, "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.memberships(tt.p.Subject, apollo)
			if tt.project.ID == "p404" {
				f.projects.EXPECT().GetProject(gomock.Any(), tt.project.ID).Return(domain.Project{}, domain.ErrNotFound).AnyTimes()
			} else {
				f.projects.EXPECT().GetProject(gomock.Any(), tt.project.ID).Return(tt.project, nil).AnyTimes()
			}
			if tt.code == "" {
				f.sessions.EXPECT().CreateSession(gomock.Any(), gomock.Any()).Return(nil)
			}
			s, err := f.sessionsUC().Create(context.Background(), tt.p, app.NewSession{Title: "t", Project: tt.project.ID, Mode: "auto"})
			var ref *domain.Refusal
			switch {
			case tt.code == "" && (err != nil || s.Project != tt.project.ID || s.Owner != tt.p.Subject):
				t.Errorf("got %+v, %v; want a session in %s", s, err, tt.project.ID)
			case tt.code == "not_found":
				if !errors.Is(err, domain.ErrNotFound) {
					t.Errorf("got %v, want ErrNotFound", err)
				}
			case tt.code != "" && (!errors.As(err, &ref) || ref.Code != tt.code):
				t.Errorf("got %v, want refusal %s", err, tt.code)
			}
		})
	}
}

func TestSessionsSetMode(t *testing.T) {
	sess := domain.Session{ID: "s1", Owner: "uma", Project: "p1", Mode: domain.ModeAsk, State: domain.SessionActive}
	tests := []struct {
		name  string
		p     domain.Principal
		mode  string
		store bool
		code  string
	}{
		{"owner keeps it as strict", uma, "ask", true, ""},
		{"owner may not go sideways (readonly runs read tools unasked)", uma, "readonly", false, domain.ReasonModeLoosening},
		{"owner loosens", uma, "auto", false, domain.ReasonModeLoosening},
		{"lead loosens", lea, "auto", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.memberships(tt.p.Subject, apollo)
			f.sessions.EXPECT().GetSession(gomock.Any(), "s1").Return(sess, nil)
			if tt.store {
				f.modes.EXPECT().SetSessionMode(gomock.Any(), "s1", domain.SessionMode(tt.mode)).Return(nil)
			}
			got, err := f.sessionsUC().SetMode(context.Background(), tt.p, "s1", tt.mode)
			var ref *domain.Refusal
			switch {
			case tt.code == "" && (err != nil || string(got.Mode) != tt.mode):
				t.Errorf("got %+v, %v; want mode %s", got, err, tt.mode)
			case tt.code != "" && (!errors.As(err, &ref) || ref.Code != tt.code):
				t.Errorf("got %v, want refusal %s", err, tt.code)
			}
		})
	}
	f := newFixture(t)
	if _, err := f.sessionsUC().SetMode(context.Background(), uma, "s1", "yolo"); !errors.Is(err, domain.ErrInvalidInput) {
		t.Errorf("bad mode: got %v, want ErrInvalidInput", err)
	}
}

func TestProjectsCreateMakesTheLeadALead(t *testing.T) {
	f := newFixture(t)
	var stored domain.Project
	f.projects.EXPECT().CreateProject(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, p domain.Project) error { stored = p; return nil })
	uc := app.NewProjects(f.projects, f.authz, now)
	p, err := uc.Create(context.Background(), lea, " Apollo ", []domain.Member{{Subject: "uma"}})
	if err != nil || !stored.IsLead("lea") || !stored.IsMember("uma") || stored.Name != "Apollo" || p.ID == "" {
		t.Errorf("got %+v, %v; want Apollo led by lea with uma", stored, err)
	}
	if _, err := uc.Create(context.Background(), lea, "", nil); !errors.Is(err, domain.ErrInvalidInput) {
		t.Errorf("empty name: got %v, want ErrInvalidInput", err)
	}
}

func TestProjectsSetMembers(t *testing.T) {
	other := domain.Project{ID: "p2", Name: "Other", Members: []domain.Member{{Subject: "lea"}}}
	tests := []struct {
		name    string
		p       domain.Principal
		project domain.Project
		want    error
	}{
		{"lead manages", lea, apollo, nil},
		{"member of a project it does not lead", lea, other, domain.ErrForbidden},
		{"user member", uma, apollo, domain.ErrForbidden},
		{"invisible", uma, other, domain.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.projects.EXPECT().GetProject(gomock.Any(), tt.project.ID).Return(tt.project, nil)
			if tt.want == nil {
				f.projects.EXPECT().SetMembers(gomock.Any(), tt.project.ID, gomock.Any()).Return(nil)
			}
			_, err := app.NewProjects(f.projects, f.authz, now).SetMembers(context.Background(), tt.p, tt.project.ID, []domain.Member{{Subject: "lea", Lead: true}})
			if !errors.Is(err, tt.want) && !(tt.want == nil && err == nil) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestAgentsNeverWiden(t *testing.T) {
	f := newFixture(t)
	sess := domain.Session{ID: "s1", Owner: "uma", Mode: domain.ModeAuto}
	f.memberships("uma")
	f.sessions.EXPECT().GetSession(gomock.Any(), "s1").Return(sess, nil).AnyTimes()
	parent := domain.Agent{ID: "agt_p", Session: "s1", Limits: domain.Limits{Tools: []string{"fs.read"}, Approval: true}}
	f.agents.EXPECT().GetAgent(gomock.Any(), "agt_p").Return(parent, nil)
	var stored domain.Agent
	f.agents.EXPECT().CreateAgent(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, a domain.Agent) error { stored = a; return nil })
	uc := app.NewAgents(f.agents, f.sessionsUC(), now)
	a, err := uc.Create(context.Background(), uma, "s1", app.NewAgent{Parent: "agt_p", Tools: []string{"fs.read", "shell.run"}, Mode: "auto"})
	if err != nil || a.Parent != "agt_p" || a.Depth != 1 || len(stored.Limits.Tools) != 1 || !stored.Limits.Approval {
		t.Errorf("got %+v, %v; want fs.read only, still asking", stored, err)
	}
}

// TestAgentNames: an agent's name is checked (domain.ValidateAgentName)
// before anything is read or stored, and stored as given; it changes none
// of the agent's limits.
func TestAgentNames(t *testing.T) {
	sess := domain.Session{ID: "s1", Owner: "uma", Mode: domain.ModeAuto}
	tests := []struct {
		name, agent string
		want        error
	}{
		{"none", "", nil},
		{"named", "notes agent <b>", nil},
		{"too long", strings.Repeat("n", domain.MaxAgentName+1), domain.ErrInvalidInput},
		{"control character", "notes\nagent", domain.ErrInvalidInput},
		{"bidirectional override", "notes\u202eagent", domain.ErrInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.memberships("uma")
			f.sessions.EXPECT().GetSession(gomock.Any(), "s1").Return(sess, nil).AnyTimes()
			var stored domain.Agent
			if tt.want == nil {
				f.agents.EXPECT().CreateAgent(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, a domain.Agent) error { stored = a; return nil })
			}
			a, err := app.NewAgents(f.agents, f.sessionsUC(), now).Create(context.Background(), uma, "s1", app.NewAgent{Name: tt.agent, Tools: []string{"fs.read"}})
			if !errors.Is(err, tt.want) && !(tt.want == nil && err == nil) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if tt.want == nil && (a.Name != tt.agent || stored.Name != tt.agent || !slices.Equal(stored.Limits.Tools, []string{"fs.read"})) {
				t.Errorf("answered %+v, stored %+v; want named %q with fs.read", a, stored, tt.agent)
			}
		})
	}
}

func TestToolCallsDecideAndResolve(t *testing.T) {
	sess := domain.Session{ID: "s1", Owner: "uma", Project: "p1", Mode: domain.ModeAuto, State: domain.SessionActive}
	root := domain.Agent{ID: "agt_r", Session: "s1"}
	rules := []domain.PolicyRule{
		{ID: "r1", Effect: domain.EffectAllow, Tool: "*", Scope: domain.ScopeRole, Value: "USER"},
		{ID: "r2", Effect: domain.EffectAsk, Tool: "fs.write", Scope: domain.ScopeProject, Value: "p1"},
	}
	tests := []struct {
		name       string
		tool       string
		registered bool
		gateway    bool
		want       domain.ToolCallStatus
		reason     string
	}{
		{"allowed", "fs.read", true, false, domain.CallAllowed, domain.ReasonPolicyAllow},
		{"asks", "fs.write", true, false, domain.CallPending, domain.ReasonPolicyAsk},
		{"gateway denies unregistered", "net.raw", false, true, domain.CallDenied, domain.ReasonGatewayUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.memberships("uma", apollo)
			f.sessions.EXPECT().GetSession(gomock.Any(), "s1").Return(sess, nil)
			f.agents.EXPECT().GetAgent(gomock.Any(), "agt_r").Return(root, nil)
			if tt.registered {
				f.catalog.EXPECT().GetTool(gomock.Any(), tt.tool).Return(domain.Tool{Name: tt.tool, Server: "fs"}, nil)
			} else {
				f.catalog.EXPECT().GetTool(gomock.Any(), tt.tool).Return(domain.Tool{}, domain.ErrNotFound)
			}
			f.settings.EXPECT().GetSettings(gomock.Any()).Return(domain.Settings{SecurityGateway: tt.gateway, DefaultSessionMode: domain.ModeAsk}, nil)
			f.policies.EXPECT().PolicyVersion(gomock.Any()).Return(int64(1), nil).AnyTimes()
			f.policies.EXPECT().ListPolicies(gomock.Any(), ports.Page{}).Return(rules, nil)
			f.calls.EXPECT().CreateToolCall(gomock.Any(), gomock.Any()).Return(nil)
			uc := app.NewToolCalls(f.calls, f.agents, f.catalog, app.NewPolicyRules(f.policies), f.settings, f.sessionsUC(), f.authz, now)
			c, err := uc.Decide(context.Background(), uma, "s1", app.CallRequest{Agent: "agt_r", Tool: tt.tool})
			if err != nil || c.Status != tt.want || c.Decision.Reason != tt.reason || c.RequestedBy != "uma" {
				t.Errorf("got %+v, %v; want %s/%s", c, err, tt.want, tt.reason)
			}
		})
	}

	t.Run("agent of another session", func(t *testing.T) {
		f := newFixture(t)
		f.memberships("uma", apollo)
		f.sessions.EXPECT().GetSession(gomock.Any(), "s1").Return(sess, nil)
		f.agents.EXPECT().GetAgent(gomock.Any(), "agt_x").Return(domain.Agent{ID: "agt_x", Session: "s2"}, nil)
		uc := app.NewToolCalls(f.calls, f.agents, f.catalog, app.NewPolicyRules(f.policies), f.settings, f.sessionsUC(), f.authz, now)
		if _, err := uc.Decide(context.Background(), uma, "s1", app.CallRequest{Agent: "agt_x", Tool: "fs.read"}); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("got %v, want ErrNotFound", err)
		}
	})

	t.Run("resolve: lead approves, stranger cannot", func(t *testing.T) {
		f := newFixture(t)
		f.memberships("lea", apollo)
		f.memberships("bob")
		f.sessions.EXPECT().GetSession(gomock.Any(), "s1").Return(sess, nil).Times(2)
		f.calls.EXPECT().GetToolCall(gomock.Any(), "c1").Return(domain.ToolCall{ID: "c1", Session: "s1", Agent: "agt_r", Tool: "fs.read", Status: domain.CallPending}, nil)
		f.agents.EXPECT().GetAgent(gomock.Any(), "agt_r").Return(root, nil)
		f.catalog.EXPECT().GetTool(gomock.Any(), "fs.read").Return(domain.Tool{Name: "fs.read", Server: "fs", ReadOnly: true}, nil)
		f.settings.EXPECT().GetSettings(gomock.Any()).Return(domain.Settings{DefaultSessionMode: domain.ModeAsk}, nil)
		f.policies.EXPECT().PolicyVersion(gomock.Any()).Return(int64(1), nil).AnyTimes()
		f.policies.EXPECT().ListPolicies(gomock.Any(), ports.Page{}).Return(nil, nil)
		f.calls.EXPECT().ResolveToolCall(gomock.Any(), "c1", domain.CallApproved, "lea", now.t).Return(domain.ToolCall{ID: "c1", Status: domain.CallApproved}, nil)
		uc := app.NewToolCalls(f.calls, f.agents, f.catalog, app.NewPolicyRules(f.policies), f.settings, f.sessionsUC(), f.authz, now)
		if c, err := uc.Resolve(context.Background(), lea, "s1", "c1", true); err != nil || c.Status != domain.CallApproved {
			t.Errorf("lead approve: got %+v, %v", c, err)
		}
		bob := domain.Principal{Subject: "bob", Roles: []domain.Role{domain.RoleUser}}
		if _, err := uc.Resolve(context.Background(), bob, "s1", "c1", true); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("stranger: got %v, want ErrNotFound (the session is invisible)", err)
		}
	})

	// A call held by the gateway whose wait ended (nobody waits for it any
	// more) is withdrawn by the next approval or rejection, which then
	// answers a conflict: nothing could receive its result.
	t.Run("resolve: a call nobody waits for is withdrawn", func(t *testing.T) {
		for _, approve := range []bool{true, false} {
			f := newFixture(t)
			f.memberships("lea", apollo)
			f.sessions.EXPECT().GetSession(gomock.Any(), "s1").Return(sess, nil)
			abandoned := domain.ToolCall{ID: "c1", Session: "s1", Agent: "agt_r", Tool: "fs.read", Status: domain.CallPending,
				Waiter: "w1", WaitUntil: now.t.Add(-time.Second)}
			f.calls.EXPECT().GetToolCall(gomock.Any(), "c1").Return(abandoned, nil)
			withdrawn := abandoned
			withdrawn.Status = domain.CallWithdrawn
			f.calls.EXPECT().ResolveToolCall(gomock.Any(), "c1", domain.CallWithdrawn, app.WithdrawnNobodyWaits, now.t).Return(withdrawn, nil)
			// The webhook hears of the withdrawal, with the call's chain.
			f.agents.EXPECT().GetAgent(gomock.Any(), "agt_r").Return(root, nil)
			f.catalog.EXPECT().GetTool(gomock.Any(), "fs.read").Return(domain.Tool{}, domain.ErrNotFound)
			hook := mocks.NewMockApprovalNotifier(gomock.NewController(t))
			hook.EXPECT().Notify(gomock.Any(), domain.Approval{Call: withdrawn, Session: sess, Chain: []string{"agt_r"}, ChainNames: []string{""}})
			uc := app.NewToolCalls(f.calls, f.agents, f.catalog, app.NewPolicyRules(f.policies), f.settings, f.sessionsUC(), f.authz, now).WithNotifier(hook)
			if c, err := uc.Resolve(context.Background(), lea, "s1", "c1", approve); !errors.Is(err, domain.ErrConflict) {
				t.Errorf("approve %t: got %+v, %v; want ErrConflict", approve, c, err)
			}
		}
	})

	// Seeing a session is not managing it: a caller whose roles read every
	// session (AUDITOR) and approve calls of its own (USER) may not approve
	// another user's call.
	t.Run("resolve: reader of all sessions cannot approve others' calls", func(t *testing.T) {
		f := newFixture(t)
		f.memberships("aud")
		f.sessions.EXPECT().GetSession(gomock.Any(), "s1").Return(sess, nil)
		f.calls.EXPECT().GetToolCall(gomock.Any(), "c1").Return(domain.ToolCall{ID: "c1", Session: "s1", Agent: "agt_r", Tool: "fs.read", Status: domain.CallPending}, nil).AnyTimes()
		uc := app.NewToolCalls(f.calls, f.agents, f.catalog, app.NewPolicyRules(f.policies), f.settings, f.sessionsUC(), f.authz, now)
		both := domain.Principal{Subject: "aud", Roles: []domain.Role{domain.RoleUser, domain.RoleAuditor}}
		var ref *domain.Refusal
		if _, err := uc.Resolve(context.Background(), both, "s1", "c1", true); !errors.As(err, &ref) || ref.Code != domain.ReasonNotSessionOwner {
			t.Errorf("got %v, want refusal %s", err, domain.ReasonNotSessionOwner)
		}
	})

	// A pending call is approved against the session as it is now: after a
	// LEAD switched it to readonly, or the gateway was switched on, the
	// approval is a conflict and nothing is stored; rejecting still works.
	approvals := []struct {
		name     string
		mode     domain.SessionMode
		tool     string
		readOnly bool
		gateway  bool
		approve  bool
		want     domain.ToolCallStatus // "" for a conflict
	}{
		{"ask mode: approved", domain.ModeAsk, "fs.write", false, false, true, domain.CallApproved},
		{"now readonly: write tool not approvable", domain.ModeReadonly, "fs.write", false, false, true, ""},
		{"now readonly: read-only tool approved", domain.ModeReadonly, "fs.read", true, false, true, domain.CallApproved},
		{"gateway now on: unregistered tool not approvable", domain.ModeAsk, "net.raw", false, true, true, ""},
		{"now readonly: reject still works", domain.ModeReadonly, "fs.write", false, false, false, domain.CallRejected},
	}
	for _, tt := range approvals {
		t.Run("resolve: "+tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.memberships("uma", apollo)
			cur := sess
			cur.Mode = tt.mode
			f.sessions.EXPECT().GetSession(gomock.Any(), "s1").Return(cur, nil)
			f.calls.EXPECT().GetToolCall(gomock.Any(), "c1").Return(domain.ToolCall{ID: "c1", Session: "s1", Agent: "agt_r", Tool: tt.tool, Status: domain.CallPending}, nil)
			f.agents.EXPECT().GetAgent(gomock.Any(), "agt_r").Return(root, nil).AnyTimes()
			if tt.gateway {
				f.catalog.EXPECT().GetTool(gomock.Any(), tt.tool).Return(domain.Tool{}, domain.ErrNotFound).AnyTimes()
			} else {
				f.catalog.EXPECT().GetTool(gomock.Any(), tt.tool).Return(domain.Tool{Name: tt.tool, Server: "fs", ReadOnly: tt.readOnly}, nil).AnyTimes()
			}
			f.settings.EXPECT().GetSettings(gomock.Any()).Return(domain.Settings{SecurityGateway: tt.gateway, DefaultSessionMode: domain.ModeAsk}, nil).AnyTimes()
			f.policies.EXPECT().PolicyVersion(gomock.Any()).Return(int64(1), nil).AnyTimes()
			f.policies.EXPECT().ListPolicies(gomock.Any(), ports.Page{}).Return(nil, nil).AnyTimes()
			if tt.want != "" {
				f.calls.EXPECT().ResolveToolCall(gomock.Any(), "c1", tt.want, "uma", now.t).Return(domain.ToolCall{ID: "c1", Status: tt.want}, nil)
			}
			uc := app.NewToolCalls(f.calls, f.agents, f.catalog, app.NewPolicyRules(f.policies), f.settings, f.sessionsUC(), f.authz, now)
			c, err := uc.Resolve(context.Background(), uma, "s1", "c1", tt.approve)
			switch {
			case tt.want == "" && !errors.Is(err, domain.ErrConflict):
				t.Errorf("got %+v, %v; want ErrConflict", c, err)
			case tt.want != "" && (err != nil || c.Status != tt.want):
				t.Errorf("got %+v, %v; want %s", c, err, tt.want)
			}
		})
	}
}

// TestApprovalMeetsDenyRulesWrittenSince: a deny rule for the requester or
// the session's project, added after the call was asked, blocks its
// approval; a rule about a role cannot, since a call keeps no roles.
func TestApprovalMeetsDenyRulesWrittenSince(t *testing.T) {
	sess := domain.Session{ID: "s1", Owner: "uma", Project: "p1", Mode: domain.ModeAsk, State: domain.SessionActive}
	root := domain.Agent{ID: "agt_r", Session: "s1"}
	tests := []struct {
		name string
		rule domain.PolicyRule
		want domain.ToolCallStatus // empty: ErrConflict
	}{
		{"deny for the requester", domain.PolicyRule{ID: "r1", Effect: domain.EffectDeny, Tool: "fs.*", Scope: domain.ScopeSubject, Value: "uma"}, ""},
		{"deny for the project", domain.PolicyRule{ID: "r2", Effect: domain.EffectDeny, Tool: "*", Scope: domain.ScopeProject, Value: "p1"}, ""},
		{"deny for another subject", domain.PolicyRule{ID: "r3", Effect: domain.EffectDeny, Tool: "*", Scope: domain.ScopeSubject, Value: "bob"}, domain.CallApproved},
		{"deny for another tool", domain.PolicyRule{ID: "r4", Effect: domain.EffectDeny, Tool: "git.*", Scope: domain.ScopeSubject, Value: "uma"}, domain.CallApproved},
		{"ask for the requester", domain.PolicyRule{ID: "r5", Effect: domain.EffectAsk, Tool: "*", Scope: domain.ScopeSubject, Value: "uma"}, domain.CallApproved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.memberships("uma", apollo)
			f.sessions.EXPECT().GetSession(gomock.Any(), "s1").Return(sess, nil)
			f.calls.EXPECT().GetToolCall(gomock.Any(), "c1").Return(domain.ToolCall{ID: "c1", Session: "s1", Agent: "agt_r", Tool: "fs.read", RequestedBy: "uma", Status: domain.CallPending}, nil)
			f.agents.EXPECT().GetAgent(gomock.Any(), "agt_r").Return(root, nil)
			f.catalog.EXPECT().GetTool(gomock.Any(), "fs.read").Return(domain.Tool{Name: "fs.read", Server: "fs", ReadOnly: true}, nil)
			f.settings.EXPECT().GetSettings(gomock.Any()).Return(domain.Settings{DefaultSessionMode: domain.ModeAsk}, nil)
			f.policies.EXPECT().PolicyVersion(gomock.Any()).Return(int64(1), nil).AnyTimes()
			f.policies.EXPECT().ListPolicies(gomock.Any(), ports.Page{}).Return([]domain.PolicyRule{tt.rule}, nil)
			if tt.want != "" {
				f.calls.EXPECT().ResolveToolCall(gomock.Any(), "c1", tt.want, "uma", now.t).Return(domain.ToolCall{ID: "c1", Status: tt.want}, nil)
			}
			uc := app.NewToolCalls(f.calls, f.agents, f.catalog, app.NewPolicyRules(f.policies), f.settings, f.sessionsUC(), f.authz, now)
			c, err := uc.Resolve(context.Background(), uma, "s1", "c1", true)
			switch {
			case tt.want == "" && !errors.Is(err, domain.ErrConflict):
				t.Errorf("got %+v, %v; want ErrConflict", c, err)
			case tt.want != "" && (err != nil || c.Status != tt.want):
				t.Errorf("got %+v, %v; want %s", c, err, tt.want)
			}
		})
	}
}

func TestDashboardScope(t *testing.T) {
	denials := []domain.AuditRecord{
		{Seq: 5, Subject: "uma", Path: "/api/v2/sessions/s1/tool-calls"}, // about p1's session
		{Seq: 4, Subject: "uma", Path: "/api/v2/audit"},                  // a member's, not about p1
		{Seq: 3, Subject: "zed", Path: "/api/v2/sessions/s9"},            // another project's session
		{Seq: 2, Subject: "zed", Path: "/api/v2/projects/p1/members"},    // about p1, by a stranger
		{Seq: 1, Subject: "uma", Path: "/API/V2/SESSIONS/s1"},            // not spelt as the routes are
		{Seq: 0, Subject: "uma", Path: "/api/v2/sessions/s2?limit=5"},    // with a query
	}
	// The sessions are read one bounded page at a time: one more than
	// counted tells there are others.
	window := ports.Page{Limit: app.DashboardSessions + 1}
	t.Run("lead sees its projects", func(t *testing.T) {
		f := newFixture(t)
		f.memberships("lea", apollo)
		f.sessions.EXPECT().ListSessions(gomock.Any(), ports.SessionFilter{Projects: []string{"p1"}, Page: window}).Return([]domain.Session{
			{ID: "s1", Owner: "uma", State: domain.SessionActive}, {ID: "s2", Owner: "uma", State: domain.SessionClosed}}, nil)
		f.audit.EXPECT().QueryAudit(gomock.Any(), gomock.Any()).Return(denials, nil)
		v, err := app.NewDashboard(f.sessions, f.projects, f.audit, f.authz).Get(context.Background(), lea)
		if err != nil || v.SessionsTotal != 2 || v.ByOwner["uma"] != 2 || v.ByState[domain.SessionClosed] != 1 || len(v.RecentDenials) != 3 || v.RecentDenials[0].Seq != 5 || v.RecentDenials[1].Seq != 2 || v.RecentDenials[2].Seq != 0 {
			t.Errorf("got %+v, %v", v, err)
		}
	})
	t.Run("lead of nothing sees nothing, not everything", func(t *testing.T) {
		f := newFixture(t)
		f.memberships("lea", domain.Project{ID: "p9", Members: []domain.Member{{Subject: "lea"}}})
		v, err := app.NewDashboard(f.sessions, f.projects, f.audit, f.authz).Get(context.Background(), lea)
		if err != nil || v.SessionsTotal != 0 || len(v.Projects) != 0 || v.Projects == nil {
			t.Errorf("got %+v, %v", v, err)
		}
	})
	t.Run("admin sees all", func(t *testing.T) {
		f := newFixture(t)
		f.sessions.EXPECT().ListSessions(gomock.Any(), ports.SessionFilter{Page: window}).Return(nil, nil)
		f.audit.EXPECT().QueryAudit(gomock.Any(), gomock.Any()).Return(denials, nil)
		v, err := app.NewDashboard(f.sessions, f.projects, f.audit, f.authz).Get(context.Background(), admin)
		if err != nil || len(v.RecentDenials) != len(denials) || v.Projects != nil {
			t.Errorf("got %+v, %v", v, err)
		}
	})
	t.Run("past the window, counts are capped and say so", func(t *testing.T) {
		f := newFixture(t)
		many := make([]domain.Session, app.DashboardSessions+1)
		for i := range many {
			many[i] = domain.Session{ID: fmt.Sprintf("s%d", i), Owner: fmt.Sprintf("o%03d", i%(app.DashboardOwners+1)), State: domain.SessionActive}
		}
		f.sessions.EXPECT().ListSessions(gomock.Any(), ports.SessionFilter{Page: window}).Return(many, nil)
		f.audit.EXPECT().QueryAudit(gomock.Any(), gomock.Any()).Return(nil, nil)
		v, err := app.NewDashboard(f.sessions, f.projects, f.audit, f.authz).Get(context.Background(), admin)
		if err != nil || v.SessionsTotal != app.DashboardSessions || !v.SessionsCapped || v.ByState[domain.SessionActive] != app.DashboardSessions ||
			len(v.ByOwner) != app.DashboardOwners || !v.OwnersCapped {
			t.Errorf("total %d (capped %v), by state %v, %d owners (capped %v), %v; want %d capped, %d owners capped",
				v.SessionsTotal, v.SessionsCapped, v.ByState, len(v.ByOwner), v.OwnersCapped, err, app.DashboardSessions, app.DashboardOwners)
		}
	})
}

func TestAuditVerifyFindsEveryBreak(t *testing.T) {
	chain := func(n int) []domain.AuditRecord {
		prev := domain.GenesisHash
		out := make([]domain.AuditRecord, n)
		for i := range out {
			r := domain.AuditRecord{Subject: "s"}
			r.Seal(int64(i+1), prev)
			prev, out[i] = r.Hash, r
		}
		return out
	}
	good := chain(5)
	bad := chain(5)
	bad[2].Subject = "edited"
	bad[4].Status = 500
	tests := []struct {
		name    string
		recs    []domain.AuditRecord
		checked int64
		seqs    []int64
	}{
		{"intact", good, 5, nil},
		{"edited third and fifth record", bad, 5, []int64{3, 5}},
		{"empty", nil, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.audit.EXPECT().AuditChain(gomock.Any(), int64(0), 1000).Return(tt.recs, nil)
			rep, err := app.NewAudit(f.audit).VerifyStep(context.Background(), app.VerifyRequest{})
			var seqs []int64
			for _, b := range rep.Breaks {
				seqs = append(seqs, b.Seq)
			}
			if err != nil || rep.OK() != (tt.seqs == nil) || rep.Checked != tt.checked || !slices.Equal(seqs, tt.seqs) || rep.Next != 0 {
				t.Errorf("got %+v, %v; want checked %d breaks at %v", rep, err, tt.checked, tt.seqs)
			}
		})
	}
}

// TestReadingIsNotManaging: a caller whose roles read every session
// (AUDITOR) and write its own (USER) may see uma's session but not change
// it: every write is refused with not_session_owner and reaches no store.
func TestReadingIsNotManaging(t *testing.T) {
	sess := domain.Session{ID: "s1", Owner: "uma", Project: "p1", Mode: domain.ModeAsk, State: domain.SessionActive}
	both := domain.Principal{Subject: "aud", Roles: []domain.Role{domain.RoleUser, domain.RoleAuditor}}
	tests := []struct {
		name string
		call func(f fixture) error
	}{
		{"add an agent", func(f fixture) error {
			_, err := app.NewAgents(f.agents, f.sessionsUC(), now).Create(context.Background(), both, "s1", app.NewAgent{})
			return err
		}},
		{"ask for a tool call", func(f fixture) error {
			uc := app.NewToolCalls(f.calls, f.agents, f.catalog, app.NewPolicyRules(f.policies), f.settings, f.sessionsUC(), f.authz, now)
			_, err := uc.Decide(context.Background(), both, "s1", app.CallRequest{Agent: "agt_r", Tool: "fs.read"})
			return err
		}},
		{"make the mode stricter", func(f fixture) error {
			_, err := f.sessionsUC().SetMode(context.Background(), both, "s1", "readonly")
			return err
		}},
		{"delete it", func(f fixture) error { return f.sessionsUC().Delete(context.Background(), both, "s1") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t) // no store write is expected: any would fail the test
			f.memberships("aud")
			f.sessions.EXPECT().GetSession(gomock.Any(), "s1").Return(sess, nil)
			f.agents.EXPECT().GetAgent(gomock.Any(), gomock.Any()).Return(domain.Agent{ID: "agt_r", Session: "s1"}, nil).AnyTimes()
			f.catalog.EXPECT().GetTool(gomock.Any(), gomock.Any()).Return(domain.Tool{Name: "fs.read", Server: "fs", ReadOnly: true}, nil).AnyTimes()
			f.settings.EXPECT().GetSettings(gomock.Any()).Return(domain.Settings{DefaultSessionMode: domain.ModeAsk}, nil).AnyTimes()
			f.policies.EXPECT().PolicyVersion(gomock.Any()).Return(int64(1), nil).AnyTimes()
			f.policies.EXPECT().ListPolicies(gomock.Any(), ports.Page{}).Return(nil, nil).AnyTimes()
			var ref *domain.Refusal
			if err := tt.call(f); !errors.As(err, &ref) || ref.Code != domain.ReasonNotSessionOwner {
				t.Errorf("got %v, want refusal %s", err, domain.ReasonNotSessionOwner)
			}
		})
	}
}
