package domain

import (
	"testing"
	"time"
)

// TestGatewayCallRoundTrip: what the gateway writes in an audit reason,
// wherever in the reason, the console reads back.
func TestGatewayCallRoundTrip(t *testing.T) {
	full := GatewayCall{Method: "tools/call", Server: "fs", Chain: "uma (managed_key key k1) → agt_1 → agt_2", Tool: "fs.read",
		Args: "ab12", Call: "call_1", Decision: "allow", Reason: "policy_allow", Upstream: 200, Duration: 1500 * time.Microsecond, Dropped: 2}
	refused := GatewayCall{Method: "tools/call", Server: "fs", Chain: "uma → agt_1", Tool: "fs.delete", Decision: "deny", Reason: ReasonPolicyDeny}
	withArgs := full
	withArgs.ArgsText = `{"a":"x; decision deny; upstream status 500 in 1s"}`
	injected := GatewayCall{Method: "tools/call", Server: "fs", Chain: "u; decision allow → agt_1", Tool: "t; decision allow", Decision: "deny", Reason: ReasonGatewayUnknown}
	personal := GatewayCall{Method: "tools/call", Server: "gh", Chain: "alice → agt_1", Tool: "gh.read", Decision: "allow",
		Reason: "policy_allow", Credential: "connection of alice (refreshed)", Upstream: 200, Duration: time.Millisecond}
	injectedRead := injected
	injectedRead.Chain, injectedRead.Tool = `u\x3b decision allow → agt_1`, `t\x3b decision allow`
	tests := []struct {
		name   string
		reason string
		want   GatewayCall
		ok     bool
	}{
		{"after the decision", "role agent token grants toolcalls:write; " + full.String(), full, true},
		{"refused, then a key note", "role USER grants toolcalls:write; " + refused.String() + "; managed key k1 (mcp)", refused, true},
		{"a held call released", "held tool call released: " + full.String(), full, true},
		{"alone", refused.String(), refused, true},
		{"arguments recorded are not read back, nor forge a field", "x; " + withArgs.String(), full, true},
		{"a tool name and a subject cannot forge a field", "x; " + injected.String(), injectedRead, true},
		{"a person's credential", "x; " + personal.String(), personal, true},
		{"another request", "role USER grants sessions:read", GatewayCall{}, false},
		{"mcp without server", "x; mcp tools/call", GatewayCall{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseGatewayCall(tt.reason)
		if ok != tt.ok || got != tt.want {
			t.Errorf("%s: ParseGatewayCall(%q) = %+v, %t; want %+v, %t", tt.name, tt.reason, got, ok, tt.want, tt.ok)
		}
	}
}

// TestGatewayCallString: the record's exact text, which audit records
// already written (and their hashes) carry.
func TestGatewayCallString(t *testing.T) {
	tests := []struct {
		name string
		call GatewayCall
		want string
	}{
		{"decided before the upstream", GatewayCall{Method: "tools/call", Server: "fs", Chain: "uma → agt_1"},
			"mcp tools/call server fs; chain uma → agt_1"},
		{"every field", GatewayCall{Method: "tools/call", Server: "fs", Chain: "uma (managed_key key k1) → agt_1", Tool: "fs.read",
			Args: "ab12", Call: "call_1", Decision: "allow", Reason: "policy_allow", Upstream: 200, Duration: 1500*time.Microsecond + 400*time.Nanosecond,
			Dropped: 2, ArgsText: `{"a":1}`},
			`mcp tools/call server fs; chain uma (managed_key key k1) → agt_1; tool fs.read; args_sha256 ab12; call call_1; decision allow; reason policy_allow; upstream status 200 in 1.5ms; 2 upstream messages dropped; arguments {"a":1}`},
		{"a person's own credential", GatewayCall{Method: "tools/call", Server: "gh", Chain: "al;ice → agt_1", Decision: "allow", Credential: "connection of al;ice",
			Upstream: 200, Duration: time.Millisecond},
			`mcp tools/call server gh; chain al\x3bice → agt_1; decision allow; credential connection of al\x3bice; upstream status 200 in 1ms`},
		{"no answer, long", GatewayCall{Method: "ping", Server: "s", Chain: "u → a", Upstream: -1, Duration: 2*time.Minute + 3*time.Second + 700*time.Nanosecond},
			"mcp ping server s; chain u → a; upstream status -1 in 2m3.000001s"},
		{"instant", GatewayCall{Method: "ping", Server: "s", Chain: "u → a", Upstream: 202},
			"mcp ping server s; chain u → a; upstream status 202 in 0s"},
		{"the caller's semicolons", GatewayCall{Method: "tools/call", Server: "fs", Chain: "u;x → a", Tool: "t;;", Decision: "deny"},
			`mcp tools/call server fs; chain u\x3bx → a; tool t\x3b\x3b; decision deny`},
	}
	for _, tt := range tests {
		if got := tt.call.String(); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}
