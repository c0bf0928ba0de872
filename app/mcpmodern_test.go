package app

import (
	"encoding/json"
	"testing"

	"github.com/agentauth/agentauth/internal/mcpwire"
	"github.com/agentauth/agentauth/ports"
)

// TestComplete: a result a 2026 client gets has its resultType; one a
// server gave keeps it.
func TestComplete(t *testing.T) {
	tests := []struct{ result, want string }{
		{`{}`, `{"resultType":"complete"}`},
		{`{ }`, `{"resultType":"complete"}`},
		{`{"content":[{"type":"text","text":"ok"}]}`, `{"resultType":"complete","content":[{"type":"text","text":"ok"}]}`},
		{`{"resultType":"input_required","requestState":"s"}`, `{"resultType":"input_required","requestState":"s"}`},
		{`{"content":[{"type":"text","text":"\"resultType\""}]}`, `{"resultType":"complete","content":[{"type":"text","text":"\"resultType\""}]}`},
		{`{"structuredContent":{"resultType":"x"}}`, `{"resultType":"complete","structuredContent":{"resultType":"x"}}`},
	}
	for _, tt := range tests {
		rep := ports.MCPReply{Messages: []mcpwire.Message{{JSONRPC: "2.0", ID: json.RawMessage("1"), Result: json.RawMessage(tt.result)}}}
		complete(rep)
		if got := string(rep.Messages[0].Result); got != tt.want {
			t.Errorf("complete(%s) = %s, want %s", tt.result, got, tt.want)
		}
	}
}

// TestPrivateList: a tools/list a 2026 client gets is the caller's
// (cacheScope private) and fresh for at most cacheTTL.
func TestPrivateList(t *testing.T) {
	tests := []struct{ result, want string }{
		{`{"tools":[]}`, `{"cacheScope":"private","ttlMs":30000,"tools":[]}`},
		{`{"tools":[],"ttlMs":1000,"cacheScope":"public"}`, `{"tools":[],"ttlMs":1000,"cacheScope":"private"}`},
		{`{"tools":[],"ttlMs":3600000,"cacheScope":"public"}`, `{"tools":[],"ttlMs":30000,"cacheScope":"private"}`},
		{`{"tools":[],"ttlMs":-5}`, `{"cacheScope":"private","tools":[],"ttlMs":30000}`},
	}
	for _, tt := range tests {
		if got := string(privateList([]byte(tt.result))); got != tt.want {
			t.Errorf("privateList(%s) = %s, want %s", tt.result, got, tt.want)
		}
	}
}
