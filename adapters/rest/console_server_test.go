package rest

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestConsoleServerSetUp: an ADMIN sets a server up for the gateway from
// the console alone: registered with its endpoint and credential (its URL
// the gateway's resource when left empty), its tools compared with the
// server's own tools/list (nothing registered until asked) and imported,
// rules for its tools added and removed on its page, whom each applies to
// by name; an AUDITOR reads the page and changes nothing; a server that
// does not answer is a 502 page naming it.
func TestConsoleServerSetUp(t *testing.T) {
	u := newGWUpstream(t)
	h := gwNew(t, 10*time.Second)
	apollo, _ := axTeam(t, h)
	form := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v.Encode()
	}
	page := func(subject, method, path, body string, status int, want, not []string) {
		t.Helper()
		r := h.do(t, subject, method, path, body)
		text := string(r.body)
		if r.status != status {
			t.Fatalf("%s %s %s: %d, want %d: %s", subject, method, path, r.status, status, text)
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s %s %s: the page lacks %q", subject, method, path, w)
			}
		}
		for _, n := range not {
			if strings.Contains(text, n) {
				t.Errorf("%s %s %s: the page shows %q", subject, method, path, n)
			}
		}
	}
	registered := func() []string {
		var names []string
		for _, tl := range h.must(t, 200, "adm", "GET", "/api/v2/tools", "")["tools"].([]any) {
			names = append(names, tl.(map[string]any)["name"].(string))
		}
		return names
	}
	const srv = "/console/catalog/servers/fs"

	page("adm", "POST", "/console/catalog/servers", form("name", "fs", "endpoint", u.url, "credential", "fs-token"), 200,
		[]string{"Done: server fs registered", "Agents connect to", gwResourceBase + "/mcp/fs", "<code>fs-token</code>", "No tools registered on fs",
			"Compare with the server's tools"}, nil)
	if got := h.must(t, 200, "adm", "GET", "/api/v2/servers", "")["servers"].([]any)[0].(map[string]any)["url"]; got != gwResourceBase+"/mcp/fs" {
		t.Errorf("the server's URL: %v, want the gateway's resource", got)
	}
	// What the upstream lists, as the API's comparison answers it.
	var listed []string
	for _, a := range h.must(t, 200, "adm", "POST", "/api/v2/servers/fs/tools/import", `{}`)["add"].([]any) {
		listed = append(listed, a.(map[string]any)["name"].(string))
	}
	slices.Sort(listed)
	page("adm", "POST", srv+"/import", "", 200,
		[]string{"<code>fs.read</code></td><td>no</td><td class=\"allow\">registers it (new)", "<code>secret.tool</code>", fmt.Sprintf("Register the %d new tools", len(listed))}, nil)
	if got := registered(); len(got) != 0 {
		t.Fatalf("a comparison registered %v", got)
	}
	page("adm", "POST", srv+"/import", form("apply", "on"), 200, []string{"Done: imported " + strings.Join(listed, ", ")}, nil)
	if got := registered(); !slices.Equal(slices.Sorted(slices.Values(got)), listed) {
		t.Fatalf("registered %v after the import, want %v", got, listed)
	}
	page("adm", "POST", srv+"/import", "", 200, []string{"leaves it (registered already)", "Nothing new to register"}, []string{"registers it (new)"})
	if r := h.do(t, "adm", "GET", "/api/v2/audit?limit=50", ""); !strings.Contains(string(r.body), "tools of server fs imported from its tools/list: add ["+strings.Join(listed, " ")+"]") {
		t.Errorf("no audit record names the import's tools")
	}

	page("adm", "POST", "/console/policies", form("server", "fs", "effect", "allow", "tool", "*", "scope", "role", "value", "USER"), 200,
		[]string{"Done: rule added: allow * for role USER", "<td>" + strings.Join(listed, ", ") + "</td>"}, nil)
	page("adm", "POST", "/console/policies", form("server", "fs", "effect", "ask", "tool", "fs.write", "scope", "project", "value", apollo), 200,
		[]string{"for project Apollo", "<td>project Apollo</td>"}, nil)
	h.must(t, 201, "adm", "POST", "/api/v2/policies", `{"effect":"deny","tool":"other.*","scope":"role","value":"USER"}`)
	page("adm", "GET", srv, "", 200, []string{"<td><code>fs.write</code></td><td>fs.write</td><td>project Apollo</td>", "Add a rule for its tools", `<option>fs.delete</option>`,
		`<option value="` + apollo + `">project Apollo</option>`}, []string{"other.*"})
	page("adm", "GET", "/console/policies", "", 200, []string{"<td>project Apollo</td>"}, []string{"project " + apollo})
	var ask string
	for _, r := range h.must(t, 200, "adm", "GET", "/api/v2/policies", "")["policies"].([]any) {
		if m := r.(map[string]any); m["tool"] == "fs.write" {
			ask = m["id"].(string)
		}
	}
	page("adm", "POST", "/console/policies/"+ask+"/delete", form("server", "fs"), 200, []string{"Done: rule removed", "Rules for its tools"}, []string{"project Apollo</td>"})

	page("aud", "GET", srv, "", 200, []string{"Rules for its tools", "allow"}, []string{"Compare with the server", "Add a rule", "Save server"})
	page("aud", "POST", srv+"/import", "", 403, []string{"servers:write"}, nil)
	page("adm", "GET", "/console/catalog/servers/nope", "", 404, nil, nil)
	page("adm", "POST", "/console/catalog/servers", form("name", "down", "endpoint", "http://127.0.0.1:9/mcp"), 200, []string{"server down registered"}, nil)
	page("adm", "POST", "/console/catalog/servers/down/import", "", 502, []string{"server down did not"}, nil)
	page("adm", "GET", "/console/catalog", "", 200, []string{`<a href="/console/catalog/servers/fs">fs</a>`}, nil)
}
