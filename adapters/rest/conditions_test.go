package rest

import (
	"strings"
	"testing"

	"github.com/agentauth/agentauth/domain"
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

// TestPolicySimulation: POST /api/v2/policies/simulate says which rule
// decides a call with these arguments, and what each matching rule said.
func TestPolicySimulation(t *testing.T) {
	h := axNew(t)
	allow := h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"allow","tool":"fs.*","scope":"role","value":"USER","when":"args.path.startsWith(\"/srv/\")"}`)["id"].(string)
	deny := h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"deny","tool":"fs.write","scope":"role","value":"USER","when":"args.env == \"prod\""}`)["id"].(string)
	for _, tc := range []struct {
		body, decision, reason, rule string
		steps                        []string
	}{
		{`{"tool":"fs.write","roles":["USER"],"arguments":{"path":"/srv/a","env":"dev"}}`, "allow", domain.ReasonPolicyAllow, allow, []string{"does not hold", "decides"}},
		{`{"tool":"fs.write","roles":["USER"],"arguments":{"path":"/srv/a","env":"prod"}}`, "deny", domain.ReasonPolicyDeny, deny, []string{"decides", "not reached"}},
		{`{"tool":"fs.write","roles":["USER"],"arguments":{"path":"/srv/a"}}`, "deny", domain.ReasonPolicyConditionError, deny, []string{"error", "not reached"}},
		{`{"tool":"fs.read","roles":["USER"],"arguments":{"path":"/etc"}}`, "deny", domain.ReasonNoPolicyRule, "", []string{"does not hold"}},
		{`{"tool":"fs.read","roles":["AUDITOR"],"arguments":{"path":"/srv/a"}}`, "deny", domain.ReasonNoPolicyRule, "", []string{}},
	} {
		var out struct {
			Decision, Reason, Rule, Message string
			Steps                           []struct{ Result string }
		}
		h.do(t, "aud", "POST", "/api/v2/policies/simulate", tc.body).decode(t, &out)
		var steps []string
		for _, s := range out.Steps {
			steps = append(steps, s.Result)
		}
		if out.Decision != tc.decision || out.Reason != tc.reason || out.Rule != tc.rule || strings.Join(steps, ",") != strings.Join(tc.steps, ",") {
			t.Errorf("%s: %+v, want %s %s by %q, steps %v", tc.body, out, tc.decision, tc.reason, tc.rule, tc.steps)
		}
	}
	if r := h.do(t, "aud", "POST", "/api/v2/policies/simulate", `{"tool":"fs.read","roles":["NOBODY"]}`); r.status != 400 {
		t.Errorf("an unknown role: %d, want 400", r.status)
	}
}
