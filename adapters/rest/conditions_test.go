package rest

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
)

// TestRuleConditions: a rule's condition is checked when the rule is
// created (400 with its position) and decides POST …/tool-calls on the
// call's real arguments; one that cannot be evaluated denies.
func TestRuleConditions(t *testing.T) {
	h := axNew(t)
	_, session, agent := axSession(t, h, "auto")
	for _, tc := range []struct {
		when         string
		line, column int
	}{
		{`args.path.startsWith(1)`, 1, 21},
		{`argz.env == "x"`, 1, 1},
		{"args.env != \"prod\" &&\n  agent.depth <= \"1\"", 2, 15},
		{`args.env`, 1, 1},
	} {
		body := `{"effect":"allow","tool":"fs.*","scope":"role","value":"USER","when":` + jsonString(tc.when) + `}`
		r := h.do(t, "adm", "POST", "/api/v2/policies", body)
		e := r.errorOf(t)
		if r.status != 400 || e.Position == nil || e.Position.Line != tc.line || e.Position.Column != tc.column || !strings.HasPrefix(e.Message, "when: ") {
			t.Errorf("when %q: %d %+v (position %+v), want 400 at %d:%d", tc.when, r.status, e, e.Position, tc.line, tc.column)
		}
	}
	rule := h.must(t, 201, "adm", "POST", "/api/v2/policies",
		`{"effect":"allow","tool":"fs.*","scope":"role","value":"USER","when":"args.path.startsWith(\"/srv/public/\") && agent.depth <= 1"}`)
	if rule["when"] != `args.path.startsWith("/srv/public/") && agent.depth <= 1` {
		t.Errorf("created rule = %v, want its when", rule)
	}
	deny := h.must(t, 201, "adm", "POST", "/api/v2/policies",
		`{"effect":"deny","tool":"fs.write","scope":"role","value":"USER","when":"args.env == \"prod\""}`)["id"].(string)
	ask := h.must(t, 201, "adm", "POST", "/api/v2/policies",
		`{"effect":"ask","tool":"fs.read","scope":"role","value":"USER","when":"has(args.recipients) && size(args.recipients) > 2"}`)["id"].(string)
	for _, tc := range []struct {
		tool, args, decision, reason, rule string
	}{
		{"fs.read", `{"path":"/srv/public/a"}`, "allow", domain.ReasonPolicyAllow, rule["id"].(string)},
		{"fs.read", `{"path":"/etc/passwd"}`, "deny", domain.ReasonNoPolicyRule, ""},
		{"fs.read", `{"path":"/srv/public/a","recipients":["a","b","c"]}`, "ask", domain.ReasonPolicyAsk, ask},
		{"fs.write", `{"path":"/srv/public/a","env":"dev"}`, "allow", domain.ReasonPolicyAllow, rule["id"].(string)},
		{"fs.write", `{"path":"/srv/public/a","env":"prod"}`, "deny", domain.ReasonPolicyDeny, deny},
		// No env argument: the deny rule cannot say, so the call is denied.
		{"fs.write", `{"path":"/srv/public/a"}`, "deny", domain.ReasonPolicyConditionError, deny},
	} {
		out := h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/tool-calls",
			`{"agent":"`+agent+`","tool":"`+tc.tool+`","arguments":`+tc.args+`}`)
		if out["decision"] != tc.decision || out["reason"] != tc.reason || (out["rule"] != nil && out["rule"] != tc.rule) {
			t.Errorf("%s %s: %v, want %s/%s by %q", tc.tool, tc.args, out, tc.decision, tc.reason, tc.rule)
		}
	}
	// A sub-agent is one deeper: depth 1 still passes, depth 2 does not.
	sub := h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/agents", `{"parent":"`+agent+`"}`)["id"].(string)
	subsub := h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/agents", `{"parent":"`+sub+`"}`)["id"].(string)
	for ag, want := range map[string]string{sub: "allow", subsub: "deny"} {
		out := h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/tool-calls", `{"agent":"`+ag+`","tool":"fs.read","arguments":{"path":"/srv/public/a"}}`)
		if out["decision"] != want {
			t.Errorf("agent %s: %v, want %s", ag, out, want)
		}
	}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestPolicySimulation: GET /api/v2/policies/simulate says which rule
// decides a call with these arguments, and what each matching rule said.
func TestPolicySimulation(t *testing.T) {
	h := axNew(t)
	allow := h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"allow","tool":"fs.*","scope":"role","value":"USER","when":"args.path.startsWith(\"/srv/\")"}`)["id"].(string)
	deny := h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"deny","tool":"fs.write","scope":"role","value":"USER","when":"args.env == \"prod\""}`)["id"].(string)
	for _, tc := range []struct {
		body, decision, reason, rule string
		steps                        []string
	}{
		{`tool=fs.write&role=USER&args={"path":"/srv/a","env":"dev"}`, "allow", domain.ReasonPolicyAllow, allow, []string{"does not hold", "decides"}},
		{`tool=fs.write&role=USER&args={"path":"/srv/a","env":"prod"}`, "deny", domain.ReasonPolicyDeny, deny, []string{"decides", "not reached"}},
		{`tool=fs.write&role=USER&args={"path":"/srv/a"}`, "deny", domain.ReasonPolicyConditionError, deny, []string{"error", "not reached"}},
		{`tool=fs.read&role=USER&args={"path":"/etc"}`, "deny", domain.ReasonNoPolicyRule, "", []string{"does not hold"}},
		{`tool=fs.read&role=AUDITOR&args={"path":"/srv/a"}`, "deny", domain.ReasonNoPolicyRule, "", []string{}},
	} {
		var out struct {
			Decision, Reason, Rule, Message string
			Steps                           []struct{ Result string }
		}
		h.do(t, "aud", "GET", "/api/v2/policies/simulate?"+queryOf(tc.body), "").decode(t, &out)
		var steps []string
		for _, s := range out.Steps {
			steps = append(steps, s.Result)
		}
		if out.Decision != tc.decision || out.Reason != tc.reason || out.Rule != tc.rule || strings.Join(steps, ",") != strings.Join(tc.steps, ",") {
			t.Errorf("%s: %+v, want %s %s by %q, steps %v", tc.body, out, tc.decision, tc.reason, tc.rule, tc.steps)
		}
	}
	if r := h.do(t, "aud", "GET", "/api/v2/policies/simulate?tool=fs.read&role=NOBODY", ""); r.status != 400 {
		t.Errorf("an unknown role: %d, want 400", r.status)
	}
}

// queryOf escapes each value of a query written plainly.
func queryOf(plain string) string {
	v := url.Values{}
	for _, kv := range strings.Split(plain, "&") {
		k, val, _ := strings.Cut(kv, "=")
		v.Add(k, val)
	}
	return v.Encode()
}

// TestGatewayDecidesConditionsOnArguments: through the MCP gateway (the
// official Go SDK as client), rules decide on the call's real arguments;
// a condition on arguments does not hide the tool from tools/list; a call
// a conditional rule holds for approval is released with exactly the
// arguments approved.
func TestGatewayDecidesConditionsOnArguments(t *testing.T) {
	u := newGWUpstream(t)
	h := gwNew(t, 10*time.Second)
	session, _, token := gwWorld(t, h, u)
	deny := h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"deny","tool":"fs.read","scope":"role","value":"USER","when":"args.path.startsWith(\"/etc/\")"}`)["id"].(string)
	ask := h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"ask","tool":"fs.read","scope":"role","value":"USER","when":"has(args.path) && args.path.startsWith(\"/private/\")"}`)["id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, version := range []string{gwLegacy, ""} { // 2025-06-18, and the SDK's own 2026-07-28
		cs, err := gwConnect(ctx, h, "fs", token, version)
		if err != nil {
			t.Fatal(err)
		}
		list, err := cs.ListTools(ctx, nil)
		if err != nil || !slices.ContainsFunc(list.Tools, func(tl *mcp.Tool) bool { return tl.Name == "fs.read" }) {
			t.Fatalf("%q: tools/list = %+v, %v: want fs.read (a conditional deny does not hide it)", version, list, err)
		}
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.read", Arguments: map[string]any{"path": "/srv/a"}}); err != nil || toolText(t, res) != "fs.read ran on /srv/a" {
			t.Fatalf("%q: fs.read /srv/a = %+v, %v", version, res, err)
		}
		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.read", Arguments: map[string]any{"path": "/etc/passwd"}})
		if code, reason := gwRPCError(t, err); code != mcpwire.CodeDenied || reason != domain.ReasonPolicyDeny || !strings.Contains(err.Error(), deny) {
			t.Errorf("%q: fs.read /etc/passwd: %v, want policy_deny by %s", version, err, deny)
		}
		cs.Close()
	}
	if slices.Contains(u.ran(), "fs.read /etc/passwd") {
		t.Error("the denied call reached the server")
	}
	cs, err := gwConnect(ctx, h, "fs", token, gwLegacy)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	done := make(chan error, 1)
	var text string
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.read", Arguments: map[string]any{"path": "/private/x"}})
		if err == nil {
			text = toolText(t, res)
		}
		done <- err
	}()
	id := gwPending(t, h, session, "fs.read")
	stored, _ := h.store.GetToolCall(context.Background(), id)
	if stored.Decision.Rule != ask || stored.Decision.Reason != domain.ReasonPolicyAsk || string(stored.Arguments) != `{"path":"/private/x"}` {
		t.Errorf("held call = %+v, want asked by %s with its arguments", stored, ask)
	}
	h.must(t, 200, "adm", "POST", "/api/v2/sessions/"+session+"/tool-calls/"+id+"/approve", "")
	if err := <-done; err != nil || text != "fs.read ran on /private/x" {
		t.Errorf("approved fs.read = %q, %v; want it run on exactly /private/x", text, err)
	}
}
