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
