package domain

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestTokenTools(t *testing.T) {
	offered := []Tool{{Name: "fs.read", ReadOnly: true}, {Name: "fs.write"}, {Name: "fs.delete"}}
	policy := NewPolicyIndex([]PolicyRule{
		{ID: "a", Effect: EffectAllow, Tool: "fs.*", Scope: ScopeRole, Value: "USER"},
		{ID: "d", Effect: EffectDeny, Tool: "fs.delete", Scope: ScopeSubject, Value: "uma"},
	})
	uma := Subject{Subject: "uma", Roles: []Role{RoleUser}}
	auto := Session{ID: "s", Mode: ModeAuto}
	tests := []struct {
		name      string
		agent     Limits
		session   Session
		subject   Subject
		requested []string
		want      []string
		code      string
	}{
		{"every tool policy allows", Limits{}, auto, uma, nil, []string{"fs.read", "fs.write"}, ""},
		{"agent limits narrow", Limits{Tools: []string{"fs.write"}}, auto, uma, nil, []string{"fs.write"}, ""},
		{"read-only session: read-only tools", Limits{}, Session{Mode: ModeReadonly}, uma, nil, []string{"fs.read"}, ""},
		{"read-only agent: read-only tools", Limits{ReadOnly: true}, auto, uma, nil, []string{"fs.read"}, ""},
		{"a subset, any case", Limits{}, auto, uma, []string{"FS.Write", "fs.write"}, []string{"fs.write"}, ""},
		{"denied tool requested", Limits{}, auto, uma, []string{"fs.delete"}, nil, ReasonTokenToolOutOfReach},
		{"tool outside the agent", Limits{Tools: []string{"fs.read"}}, auto, uma, []string{"fs.write"}, nil, ReasonTokenToolOutOfReach},
		{"unregistered tool", Limits{}, auto, uma, []string{"shell.run"}, nil, ReasonTokenToolOutOfReach},
		{"no rule: nothing in reach", Limits{}, auto, Subject{Subject: "x", Roles: []Role{RoleAuditor}}, nil, nil, ReasonTokenNoTools},
		{"empty request", Limits{}, auto, uma, []string{}, nil, ReasonTokenNoTools},
	}
	for _, tt := range tests {
		got, err := TokenTools(TokenToolsInput{Offered: offered, Agent: Agent{ID: "a", Limits: tt.agent}, Session: tt.session, Policy: policy,
			Subject: tt.subject, Requested: tt.requested})
		var tr *TokenRefusal
		switch {
		case tt.code == "" && (err != nil || !slices.Equal(got, tt.want)):
			t.Errorf("%s: %v %v, want %v", tt.name, got, err, tt.want)
		case tt.code != "" && (!errors.As(err, &tr) || tr.Code != tt.code):
			t.Errorf("%s: %v %v, want %s", tt.name, got, err, tt.code)
		}
	}
}

func TestTokenLifetime(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 5 * time.Minute, true}, {"1m", time.Minute, true}, {"15m", 15 * time.Minute, true},
		{"16m", 0, false}, {"0s", 0, false}, {"-1m", 0, false}, {"soon", 0, false}, {"500ms", 0, false},
	}
	for _, tt := range tests {
		got, err := TokenLifetime(tt.in, 5*time.Minute, 15*time.Minute)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("%q: %v %v", tt.in, got, err)
		}
	}
}
