package domain

import (
	"errors"
	"slices"
	"strings"
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

func TestCanonicalResource(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://fs.example.com/mcp", "https://fs.example.com/mcp"},
		{"HTTPS://FS.Example.COM/mcp", "https://fs.example.com/mcp"},
		{"https://fs.example.com:443/mcp", "https://fs.example.com/mcp"},
		{"http://fs.example.com:80", "http://fs.example.com"},
		{"https://fs.example.com/", "https://fs.example.com"},
		{"https://fs.example.com:8443/MCP", "https://fs.example.com:8443/MCP"},
		{"http://[::1]:80/mcp", "http://[::1]/mcp"},
		{"https://fs.example.com/mcp?tenant=a", "https://fs.example.com/mcp?tenant=a"},
		{"https://fs.example.com/mcp#x", ""},
		{"https://user@fs.example.com/mcp", ""},
		{"ftp://fs.example.com/mcp", ""},
		{"/mcp", ""},
		{"fs", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, err := CanonicalResource(tt.in)
		if tt.want == "" && err == nil || tt.want != "" && (err != nil || got != tt.want) {
			t.Errorf("CanonicalResource(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// TestTokenAudienceIs is the check an MCP gateway makes: the token's aud
// is exactly the registered server's canonical resource URL.
func TestTokenAudienceIs(t *testing.T) {
	fs := Server{Name: "fs", URL: "HTTPS://fs.example.com:443/mcp"}
	tests := []struct {
		aud  string
		sv   Server
		want bool
	}{
		{"https://fs.example.com/mcp", fs, true},
		{"fs", fs, false},                             // the name is input, never an audience
		{"HTTPS://fs.example.com:443/mcp", fs, false}, // spelled otherwise than minted
		{"https://fs.example.com/mcp/", fs, false},    // another path
		{"https://sh.example.com/mcp", fs, false},     // another server
		{"", fs, false},
		{"https://fs.example.com/mcp", Server{Name: "fs"}, false}, // a server without URL has no audience
	}
	for _, tt := range tests {
		if got := TokenAudienceIs(tt.aud, tt.sv); got != tt.want {
			t.Errorf("TokenAudienceIs(%q, %+v) = %v, want %v", tt.aud, tt.sv, got, tt.want)
		}
	}
}

// TestAgentGrantDescribe: the grant's exact text in the audit log.
func TestAgentGrantDescribe(t *testing.T) {
	expires := time.Date(2026, 11, 25, 23, 0, 0, 0, time.FixedZone("X", 3600))
	tests := []struct {
		name  string
		grant AgentGrant
		want  string
	}{
		{"a sub-agent", AgentGrant{ID: "jti1", Subject: "uma", Chain: []string{"agt_1", "agt_2"}, Audience: "fs", Mode: ModeAuto,
			Tools: []string{"fs.read", "fs.write"}, Expires: expires},
			"chain uma → agt_1 → agt_2; audience fs; tools [fs.read fs.write]; mode auto; jti jti1; expires 2026-11-25T22:00:00Z"},
		{"no tools", AgentGrant{ID: "j", Subject: "u", Chain: []string{"a"}, Audience: "s", Expires: expires},
			"chain u → a; audience s; tools []; mode ; jti j; expires 2026-11-25T22:00:00Z"},
	}
	for _, tt := range tests {
		if got := tt.grant.Describe(); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestDecideAgentCall: an agent token's call is decided with its owner's
// roles as they are now (the principal of the input) within what the token
// grants: a role rule made after minting binds it, the rule that decided is
// named, and an owner demoted or unknown narrows the token at once.
func TestDecideAgentCall(t *testing.T) {
	a, _ := NewAuthorizer(nil)
	allow := PolicyRule{ID: "pol_allow", Effect: EffectAllow, Tool: "fs.*", Scope: ScopeRole, Value: "USER"}
	denyRead := PolicyRule{ID: "pol_deny", Effect: EffectDeny, Tool: "fs.read", Scope: ScopeRole, Value: "USER"}
	askRead := PolicyRule{ID: "pol_ask", Effect: EffectAsk, Tool: "fs.read", Scope: ScopeRole, Value: "USER"}
	g := AgentGrant{Subject: "uma", Chain: []string{"agt_1"}, Tools: []string{"fs.read", "fs.write"}, Ask: []string{"fs.write"}}
	user := Principal{Subject: "uma", Roles: []Role{RoleUser}}
	tests := []struct {
		name    string
		owner   Principal
		tool    string
		rules   []PolicyRule
		effect  Effect
		reason  string
		rule    string
		message string
	}{
		{"granted and allowed now", user, "fs.read", []PolicyRule{allow}, EffectAllow, ReasonTokenPolicyAllow, "pol_allow", "policy rule pol_allow allows"},
		{"not in the token", user, "fs.delete", []PolicyRule{allow}, EffectDeny, ReasonTokenToolNotGranted, "", "does not grant"},
		{"a role deny made after minting", user, "fs.read", []PolicyRule{allow, denyRead}, EffectDeny, ReasonPolicyDeny, "pol_deny", "pol_deny"},
		{"a role ask made after minting", user, "fs.read", []PolicyRule{allow, askRead}, EffectAsk, ReasonPolicyAsk, "pol_ask", "pol_ask"},
		{"the allow rule removed", user, "fs.read", nil, EffectDeny, ReasonNoPolicyRule, "", "no policy rule"},
		{"an ask rule at minting, gone now", user, "fs.write", []PolicyRule{allow}, EffectAllow, ReasonTokenPolicyAllow, "pol_allow", "pol_allow"},
		{"owner demoted to AUDITOR", Principal{Subject: "uma", Roles: []Role{RoleAuditor}}, "fs.read", []PolicyRule{allow}, EffectDeny, ReasonRoleLacksPermission, "", "AUDITOR"},
		{"owner's roles unknown", Principal{Subject: "uma"}, "fs.read", []PolicyRule{allow}, EffectDeny, ReasonTokenOwnerRolesUnknown, "", "uma"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := a.DecideAgentCall(ToolCallInput{Principal: tt.owner, Session: Session{ID: "s", Owner: "uma", Mode: ModeAuto},
				Agent: Agent{ID: "agt_1"}, Tool: tt.tool, Policy: NewPolicyIndex(tt.rules)}, g)
			if d.Effect != tt.effect || d.Reason != tt.reason || d.Rule != tt.rule || !strings.Contains(d.Message, tt.message) {
				t.Errorf("= %+v, want %s %s rule %q, message with %q", d, tt.effect, tt.reason, tt.rule, tt.message)
			}
		})
	}
}
