package rest

import (
	"context"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// TestCatalogChanges: an ADMIN changes (PUT replaces, PATCH changes what
// it names) and removes servers and tools, validated as when registered,
// each change audited; never while a call of theirs waits for approval,
// nor a server that still has tools. Others may not.
func TestCatalogChanges(t *testing.T) {
	h := axNew(t)
	h.must(t, 201, "adm", "POST", "/api/v2/servers", `{"name":"fs","url":"http://127.0.0.1:7/mcp"}`)
	h.must(t, 201, "adm", "POST", "/api/v2/servers", `{"name":"git","url":"http://127.0.0.1:8/mcp"}`)
	h.must(t, 201, "adm", "POST", "/api/v2/tools", `{"name":"fs.write","server":"fs"}`)
	h.must(t, 201, "adm", "POST", "/api/v2/tools", `{"name":"fs/raw","server":"fs","description":"raw access"}`)
	steps := []struct {
		name, subject, method, path, body string
		status                            int
		has                               string // in the answer
	}{
		{"PUT replaces the server", "adm", "PUT", "/api/v2/servers/fs", `{"url":"https://fs.example/mcp","endpoint":"http://fs.internal/mcp","credential":"fs-token"}`, 200, `"endpoint":"http://fs.internal/mcp"`},
		{"PATCH changes what it names", "adm", "PATCH", "/api/v2/servers/fs", `{"credential":""}`, 200, `"url":"https://fs.example/mcp","endpoint":"http://fs.internal/mcp","created_at"`},
		{"PUT without endpoint drops it", "adm", "PUT", "/api/v2/servers/git", `{"name":"git","url":"https://git.example/mcp"}`, 200, `"url":"https://git.example/mcp","created_at"`},
		{"a URL that is no resource", "adm", "PATCH", "/api/v2/servers/fs", `{"url":"https://fs.example/mcp#x"}`, 400, "url"},
		{"a credential without endpoint", "adm", "PUT", "/api/v2/servers/git", `{"url":"https://git.example/mcp","credential":"x"}`, 400, "endpoint"},
		{"a credential path", "adm", "PATCH", "/api/v2/servers/fs", `{"credential":"../x"}`, 400, "credential"},
		{"another name", "adm", "PUT", "/api/v2/servers/fs", `{"name":"fs2","url":"https://fs.example/mcp"}`, 400, "name"},
		{"an unknown field", "adm", "PATCH", "/api/v2/servers/fs", `{"created_at":"2026-01-01T00:00:00Z"}`, 400, "created_at"},
		{"no such server", "adm", "PATCH", "/api/v2/servers/nope", `{"url":"https://x.example"}`, 404, ""},
		{"a USER", "uma", "PATCH", "/api/v2/servers/fs", `{"url":"https://x.example"}`, 403, "servers:write"},
		{"an AUDITOR removing", "aud", "DELETE", "/api/v2/tools/fs.write", "", 403, "tools:write"},
		{"PATCH a tool", "adm", "PATCH", "/api/v2/tools/FS.Write", `{"second_approver":true,"description":"Write a file.\nSecond line."}`, 200, `"second_approver":true,"description":"Write a file.\nSecond line."`},
		{"move it to another server", "adm", "PATCH", "/api/v2/tools/fs.write", `{"server":"git"}`, 200, `"server":"git","read_only":false,"second_approver":true`},
		{"onto a server not registered", "adm", "PATCH", "/api/v2/tools/fs.write", `{"server":"nope"}`, 404, ""},
		{"a description with a control character", "adm", "PATCH", "/api/v2/tools/fs.write", `{"description":"bell \u0007"}`, 400, "description"},
		{"PUT a tool named by an escaped slash", "adm", "PUT", "/api/v2/tools/fs%2Fraw", `{"name":"FS/raw","server":"fs","read_only":true}`, 200, `"name":"fs/raw","server":"fs","read_only":true,"second_approver":false,"description":""`},
		{"a server with tools", "adm", "DELETE", "/api/v2/servers/fs", "", 409, "remove them first"},
		{"remove a tool", "adm", "DELETE", "/api/v2/tools/fs%2Fraw", "", 204, ""},
		{"remove it again", "adm", "DELETE", "/api/v2/tools/fs%2Fraw", "", 404, ""},
		{"remove the server without tools", "adm", "DELETE", "/api/v2/servers/fs", "", 204, ""},
		{"gone", "adm", "PATCH", "/api/v2/servers/fs", `{"url":"https://x.example"}`, 404, ""},
	}
	for _, st := range steps {
		r := h.do(t, st.subject, st.method, st.path, st.body)
		if r.status != st.status || !strings.Contains(string(r.body), st.has) {
			t.Errorf("%s: %s %s = %d %s, want %d with %s", st.name, st.method, st.path, r.status, r.body, st.status, st.has)
		}
	}

	// A call of fs.write (now on git) waits for approval: neither the tool
	// nor its server changes until it is resolved.
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"allow","tool":"*","scope":"role","value":"USER"}`)
	session := h.must(t, 201, "uma", "POST", "/api/v2/sessions", `{"title":"s","mode":"ask"}`)["id"].(string)
	agent := h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/agents", "")["id"].(string)
	call := h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/tool-calls", `{"agent":"`+agent+`","tool":"fs.write","arguments":{"path":"/a"}}`)["id"].(string)
	for _, r := range []struct{ method, path, body string }{
		{"PATCH", "/api/v2/tools/fs.write", `{"read_only":true}`},
		{"DELETE", "/api/v2/tools/fs.write", ""},
		{"PATCH", "/api/v2/servers/git", `{"endpoint":"http://evil.example/mcp"}`},
	} {
		if got := h.do(t, "adm", r.method, r.path, r.body); got.status != 409 || !strings.Contains(string(got.body), "waits for approval") {
			t.Errorf("%s %s while %s waits: %d %s, want 409", r.method, r.path, call, got.status, got.body)
		}
	}
	h.must(t, 200, "uma", "POST", "/api/v2/sessions/"+session+"/tool-calls/"+call+"/reject", "")
	h.must(t, 204, "adm", "DELETE", "/api/v2/tools/fs.write", "")

	recs, err := h.store.QueryAudit(context.Background(), ports.AuditQuery{Subject: "adm", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`server fs changed: url "http://127.0.0.1:7/mcp" → "https://fs.example/mcp"`, "tool fs.write changed: server fs → git", "tool fs/raw removed", "server fs removed", "tool fs.write removed"}
	for _, w := range want {
		found := false
		for _, rec := range recs {
			found = found || rec.Decision == domain.AuditAllow && strings.Contains(rec.Reason, w)
		}
		if !found {
			t.Errorf("no audit record says %q", w)
		}
	}
}
