package rest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/agentauth/agentauth/domain"
)

// TestToolCallArguments: POST …/tool-calls takes the call's arguments,
// keeps them as RFC 8785 canonical JSON with their SHA-256 (what an
// approval binds to, as at the gateway), and every read of the call shows
// them; what is not a bounded JSON object is a 400.
func TestToolCallArguments(t *testing.T) {
	h := axNew(t)
	_, session, agent := axSession(t, h, "ask")
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"allow","tool":"*","scope":"role","value":"USER"}`)
	calls := "/api/v2/sessions/" + session + "/tool-calls"
	sent := `{"path":"/etc/app.conf","env":"prod","opts":{"z":1,"a":[true,null,1.50]},"note":"naïve \u00e9"}`
	want, err := jcs.Transform([]byte(sent))
	if err != nil {
		t.Fatal(err)
	}
	var made toolCallJSON
	h.must(t, 201, "uma", "POST", calls, `{"agent":"`+agent+`","tool":"fs.write","arguments":`+sent+`}`)
	list := h.must(t, 200, "uma", "GET", calls, "")["tool_calls"].([]any)
	b, _ := json.Marshal(list[0])
	if err := json.Unmarshal(b, &made); err != nil {
		t.Fatal(err)
	}
	if string(made.Arguments) != string(want) || made.ArgsHash != domain.ArgumentsHash(want) || made.Status != "pending" {
		t.Errorf("GET …/tool-calls = arguments %s, sha %s, status %s; want %s, %s, pending", made.Arguments, made.ArgsHash, made.Status, want, domain.ArgumentsHash(want))
	}
	var approved toolCallJSON
	h.do(t, "lea", "POST", calls+"/"+made.ID+"/approve", "").decode(t, &approved)
	if string(approved.Arguments) != string(want) || approved.ArgsHash != made.ArgsHash {
		t.Errorf("the approval's answer = %s %s, want the arguments asked", approved.Arguments, approved.ArgsHash)
	}
	var none toolCallJSON
	h.do(t, "uma", "POST", calls, `{"agent":"`+agent+`","tool":"fs.read"}`).decode(t, &none)
	if string(none.Arguments) != "{}" || none.ArgsHash != domain.ArgumentsHash([]byte("{}")) {
		t.Errorf("no arguments = %s %s, want {}", none.Arguments, none.ArgsHash)
	}

	var page struct {
		Records []struct{ Reason string } `json:"records"`
	}
	h.do(t, "adm", "GET", "/api/v2/audit?limit=500", "").decode(t, &page)
	asked, resolved := false, false
	for _, rec := range page.Records {
		asked = asked || strings.Contains(rec.Reason, "tool call "+made.ID+" fs.write: ask") && strings.HasSuffix(rec.Reason, "args_sha256 "+made.ArgsHash)
		resolved = resolved || strings.Contains(rec.Reason, "tool call "+made.ID+" approved; tool fs.write; args_sha256 "+made.ArgsHash)
	}
	if !asked || !resolved {
		t.Errorf("audit records of the call and its approval name the arguments' SHA-256: %v %v", asked, resolved)
	}

	bad := []struct{ name, args string }{
		{"an array", `[1,2]`},
		{"a string", `"x"`},
		{"a name twice", `{"path":"/a","path":"/b"}`},
		{"a name twice in another case", `{"path":"/a","Path":"/b"}`},
		{"over the bound", `{"data":"` + strings.Repeat("x", domain.MaxArgumentsBytes) + `"}`},
	}
	for _, tt := range bad {
		r := h.do(t, "uma", "POST", calls, `{"agent":"`+agent+`","tool":"fs.read","arguments":`+tt.args+`}`)
		if r.status != 400 || !strings.Contains(string(r.body), "argument") && !strings.Contains(string(r.body), "twice") {
			t.Errorf("%s: %d %s, want 400 naming the arguments", tt.name, r.status, r.body)
		}
	}
}

// TestApprovalsPageShowsTheCall: the console's Approvals page shows an
// approver the call as it will run: every argument (a long one folded, not
// cut), the tool's description, the session, the agent chain, who asked
// and the rule that asked; markup in them is text.
func TestApprovalsPageShowsTheCall(t *testing.T) {
	h := axNew(t)
	_, session, agent := axSession(t, h, "auto")
	h.must(t, 200, "adm", "PATCH", "/api/v2/tools/fs.write", `{"description":"Writes <b>content</b> to a file at path."}`)
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"allow","tool":"*","scope":"role","value":"USER"}`)
	rule := h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"ask","tool":"fs.write","scope":"role","value":"USER"}`)["id"].(string)
	child := h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/agents", `{"parent":"`+agent+`"}`)["id"].(string)
	content := strings.Repeat("line of the file\n", 40) + "THE END"
	args, _ := json.Marshal(map[string]string{"path": "/etc/<app>.conf", "content": content})
	call := h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/tool-calls", `{"agent":"`+child+`","tool":"fs.write","arguments":`+string(args)+`}`)["id"].(string)
	r := h.do(t, "uma", "GET", "/console/approvals", "")
	page := string(r.body)
	for _, want := range []string{
		"/etc/&lt;app&gt;.conf", // a short argument, as text
		"THE END",               // a long one whole, behind its fold
		"<details><summary><code>line of the file</code>… <span class=\"mut\">(687 characters of text; show all)</span></summary>",
		"Writes &lt;b&gt;content&lt;/b&gt; to a file at path.", // the description
		"<code>" + session + "</code>",                                  // the session
		"uma → <code>" + agent + "</code> → <code>" + child + "</code>", // the chain
		"uma, ",                          // who asked
		"rule <code>" + rule + "</code>", // the rule that asked
		"tool-calls/" + call + "/approve",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the Approvals page lacks %q:\n%s", want, page)
		}
	}
}
