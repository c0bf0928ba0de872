package rest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/domain"
)

// TestConsoleGatewayPage: the console lists gateway calls from the audit
// log with chain (its agents named), server, tool, decision, reason and upstream status;
// holders of audit:read see every caller's (and filter by subject), others
// only their own.
func TestConsoleGatewayPage(t *testing.T) {
	u := newGWUpstream(t)
	h := gwNew(t, 10*time.Second)
	_, agent, token := gwWorld(t, h, u)
	bobSession := h.must(t, 201, "bob", "POST", "/api/v2/sessions", `{"title":"b","mode":"auto"}`)["id"].(string)
	bobAgent := h.must(t, 201, "bob", "POST", "/api/v2/sessions/"+bobSession+"/agents", `{"name":"deploy <bot>"}`)["id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	call := func(hd map[string]string, tool string) {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "console-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint: h.url + "/mcp/fs", MaxRetries: -1, HTTPClient: &http.Client{Transport: headers{hd, http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"path": "/p"}})
	}
	call(map[string]string{"Authorization": "Bearer " + token}, "fs.read")
	call(map[string]string{"Authorization": "Bearer " + token}, "fs.delete")
	call(map[string]string{"Authorization": "Bearer " + axKey("bob"), HeaderGatewaySession: bobSession, HeaderGatewayAgent: bobAgent}, "fs.read")

	uma := "uma → " + agent
	// An agent's name is shown beside its id, escaped.
	bob := `bob (api_key) → <span class="who">deploy &lt;bot&gt;</span> <span class="mut">` + bobAgent + `</span>`
	tests := []struct {
		caller, query string
		want, not     []string
	}{
		{"adm", "", []string{uma, bob, "<td>fs.read</td>", "<td>fs.delete</td>", domain.ReasonPolicyDeny, "<td>200</td>", "/console/audit/"}, nil},
		{"aud", "", []string{uma, bob}, nil},
		{"adm", "?subject=bob", []string{bob}, []string{uma}},
		{"uma", "", []string{uma, "<td>fs.delete</td>", domain.ReasonPolicyDeny}, []string{bob, "/console/audit/", `name="subject"`}},
		{"uma", "?subject=bob", []string{uma}, []string{bob}}, // the filter is for auditors: others see their own
		{"bob", "", []string{bob}, []string{uma}},
	}
	for _, tt := range tests {
		r := h.do(t, tt.caller, "GET", "/console/gateway"+tt.query, "")
		body := string(r.body)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", tt.caller, r.status, body)
		}
		for _, w := range tt.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s%s: page lacks %q", tt.caller, tt.query, w)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(body, n) {
				t.Errorf("%s%s: page shows %q", tt.caller, tt.query, n)
			}
		}
	}
	if r := h.do(t, "adm", "GET", "/console/gateway?cursor=x", ""); r.status != 400 {
		t.Errorf("bad cursor: %d, want 400", r.status)
	}
}
