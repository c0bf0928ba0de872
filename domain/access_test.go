package domain

import (
	"errors"
	"testing"
)

func mustAuthorizer(t *testing.T) *Authorizer {
	t.Helper()
	a, err := NewAuthorizer(nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestProjects(t *testing.T) {
	a := mustAuthorizer(t)
	pr := Project{ID: "p1", Name: "Apollo", Members: []Member{{Subject: "lea", Lead: true}, {Subject: "uma"}}}
	other := Project{ID: "p2", Name: "Other", Members: []Member{{Subject: "uma", Lead: true}}}
	if got := TeamOf("lea", []Project{pr, other}); len(got.Member) != 1 || len(got.Leads) != 1 || !got.LeadsProject("p1") || got.LeadsProject("") {
		t.Errorf("TeamOf(lea) = %+v, want member and lead of p1 only", got)
	}
	if got := TeamOf("uma", []Project{pr, other}); !got.InProject("p1") || !got.InProject("p2") || got.LeadsProject("p1") || !got.LeadsProject("p2") || got.InProject("") {
		t.Errorf("TeamOf(uma) = %+v", got)
	}
	tests := []struct {
		name      string
		p         Principal
		read      bool
		manageErr bool
	}{
		{"lead with projects:write", Principal{Subject: "lea", Roles: []Role{RoleLead}}, true, false},
		{"member", Principal{Subject: "uma", Roles: []Role{RoleUser}}, true, true},
		{"lead flag without the role", Principal{Subject: "lea", Roles: []Role{RoleUser}}, true, true},
		{"stranger lead", Principal{Subject: "zed", Roles: []Role{RoleLead}}, false, true},
		{"auditor reads all", Principal{Subject: "aud", Roles: []Role{RoleAuditor}}, true, true},
		{"admin", Principal{Subject: "adm", Roles: []Role{RoleAdmin}}, true, false},
	}
	for _, tt := range tests {
		if got := a.CanReadProject(tt.p, pr); got != tt.read {
			t.Errorf("%s: CanReadProject = %v, want %v", tt.name, got, tt.read)
		}
		err := a.CanManageMembers(tt.p, pr)
		if (err != nil) != tt.manageErr {
			t.Errorf("%s: CanManageMembers err = %v, want error %v", tt.name, err, tt.manageErr)
		}
		var ref *Refusal
		if err != nil && (!errors.As(err, &ref) || ref.Code != ReasonNotProjectLead || !errors.Is(err, ErrForbidden) || ref.Error() == "") {
			t.Errorf("%s: got %v, want a Refusal %s matching ErrForbidden", tt.name, err, ReasonNotProjectLead)
		}
	}
}

func TestValidateProject(t *testing.T) {
	tests := []struct {
		p  Project
		ok bool
	}{
		{Project{Name: "ok", Members: []Member{{Subject: "a"}, {Subject: "b", Lead: true}}}, true},
		{Project{Name: "  "}, false},
		{Project{Name: string(make([]rune, maxProjectName+1))}, false},
		{Project{Name: "x", Members: []Member{{Subject: " "}}}, false},
		{Project{Name: "x", Members: []Member{{Subject: "a"}, {Subject: "a", Lead: true}}}, false},
	}
	for i, tt := range tests {
		err := ValidateProject(tt.p)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidInput)) {
			t.Errorf("case %d: got %v, want ok %v", i, err, tt.ok)
		}
	}
}

func TestSessionAccess(t *testing.T) {
	a := mustAuthorizer(t)
	team := Team{Member: []string{"p1"}, Leads: []string{"p1"}}
	mine := Session{ID: "s1", Owner: "me", Project: "p1", Mode: ModeAsk}
	teams := Session{ID: "s2", Owner: "other", Project: "p1", Mode: ModeAsk}
	foreign := Session{ID: "s3", Owner: "other", Project: "p9", Mode: ModeAsk}
	user := Principal{Subject: "me", Roles: []Role{RoleUser}}
	lead := Principal{Subject: "me", Roles: []Role{RoleLead}}
	auditor := Principal{Subject: "me", Roles: []Role{RoleAuditor}}
	admin := Principal{Subject: "me", Roles: []Role{RoleAdmin}}
	tests := []struct {
		name   string
		p      Principal
		s      Session
		read   bool
		manage bool
		scope  SessionScope
	}{
		{"user own", user, mine, true, true, ScopeOwn},
		{"user never sees another's, even led project", user, teams, false, false, ScopeOwn},
		{"lead sees its project's", lead, teams, true, true, ScopeTeam},
		{"lead not other projects'", lead, foreign, false, false, ScopeTeam},
		{"auditor reads all, writes none", auditor, foreign, true, false, ScopeAll},
		{"auditor does not write own", auditor, mine, true, false, ScopeAll},
		{"admin all", admin, foreign, true, true, ScopeAll},
	}
	for _, tt := range tests {
		if got := a.SessionReadScope(tt.p); got != tt.scope {
			t.Errorf("%s: scope = %v, want %v", tt.name, got, tt.scope)
		}
		if got := a.CanReadSessionIn(tt.p, team, tt.s); got != tt.read {
			t.Errorf("%s: read = %v, want %v", tt.name, got, tt.read)
		}
		err := a.CheckManageSession(tt.p, team, tt.s)
		if got := err == nil; got != tt.manage {
			t.Errorf("%s: manage err = %v, want allowed %v", tt.name, err, tt.manage)
		}
	}
	// Without team knowledge: owner and global roles only.
	if !a.CanReadSession(user, mine) || a.CanReadSession(lead, teams) || !a.CanManageSession(user, mine) || a.CanManageSession(lead, teams) {
		t.Error("team-less checks: want owner-only for USER and LEAD")
	}
}

func TestCheckCreateSession(t *testing.T) {
	a := mustAuthorizer(t)
	team := Team{Member: []string{"p1"}}
	tests := []struct {
		p       Principal
		project string
		ok      bool
	}{
		{Principal{Subject: "u", Roles: []Role{RoleUser}}, "", true},
		{Principal{Subject: "u", Roles: []Role{RoleUser}}, "p1", true},
		{Principal{Subject: "u", Roles: []Role{RoleUser}}, "p2", false},
		{Principal{Subject: "u", Roles: []Role{RoleAdmin}}, "p2", true},
	}
	for _, tt := range tests {
		err := a.CheckCreateSession(tt.p, team, tt.project)
		if (err == nil) != tt.ok {
			t.Errorf("%v in %q: got %v, want ok %v", tt.p.Roles, tt.project, err, tt.ok)
		}
	}
}

func TestModes(t *testing.T) {
	strict := []struct {
		next, cur SessionMode
		want      bool
	}{
		{ModeReadonly, ModeAuto, true},
		{ModeAsk, ModeAuto, true},
		{ModeAuto, ModeAuto, true},
		{ModeAuto, ModeAsk, false},
		{ModeAuto, ModeReadonly, false},
		{ModeReadonly, ModeAsk, false}, // sideways: readonly runs read tools unasked
		{ModeAsk, ModeReadonly, false},
		{ModeAsk, ModeAsk, true},
	}
	for _, tt := range strict {
		if got := AtLeastAsStrict(tt.next, tt.cur); got != tt.want {
			t.Errorf("AtLeastAsStrict(%s, %s) = %v, want %v", tt.next, tt.cur, got, tt.want)
		}
	}
	a := mustAuthorizer(t)
	team := Team{Member: []string{"p1"}, Leads: []string{"p1"}}
	s := Session{ID: "s1", Owner: "u", Project: "p1", Mode: ModeAsk}
	owner := Principal{Subject: "u", Roles: []Role{RoleUser}}
	lead := Principal{Subject: "l", Roles: []Role{RoleLead}}
	admin := Principal{Subject: "a", Roles: []Role{RoleAdmin}}
	stranger := Principal{Subject: "x", Roles: []Role{RoleUser}}
	tests := []struct {
		name string
		p    Principal
		t    Team
		next SessionMode
		code string
	}{
		{"owner tightens", owner, Team{}, ModeAsk, ""},
		{"owner may not loosen", owner, Team{}, ModeAuto, ReasonModeLoosening},
		{"owner may not go sideways", owner, Team{}, ModeReadonly, ReasonModeLoosening},
		{"lead loosens", lead, team, ModeAuto, ""},
		{"admin loosens", admin, Team{}, ModeAuto, ""},
		{"stranger", stranger, Team{}, ModeReadonly, ReasonNotSessionOwner},
	}
	for _, tt := range tests {
		err := a.CheckSetMode(tt.p, tt.t, s, tt.next)
		var ref *Refusal
		switch {
		case tt.code == "" && err != nil:
			t.Errorf("%s: got %v, want allowed", tt.name, err)
		case tt.code != "" && (!errors.As(err, &ref) || ref.Code != tt.code):
			t.Errorf("%s: got %v, want refusal %s", tt.name, err, tt.code)
		}
	}
}

func TestEveryPermissionIsDescribed(t *testing.T) {
	for _, p := range AllPermissions() {
		if p.Describe() == "" {
			t.Errorf("permission %s has no description", p)
		}
	}
	if Permission("nope:x").Describe() != "" {
		t.Error("unknown permission described")
	}
}
