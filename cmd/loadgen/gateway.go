package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/agentauth/agentauth/internal/launch"
)

// gatewayCall is an allowed MCP tools/call, the same body to the gateway
// and to the upstream directly; gatewayCall2026 the same call of an MCP
// 2026-07-28 client (its _meta; no session, headers that say what the body
// says: modernHeaders).
const (
	gatewayCall     = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs.read","arguments":{"path":"/a"}}}`
	gatewayCall2026 = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs26.read","arguments":{"path":"/a"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"loadgen","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`
)

var modernHeaders = []header{{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "tools/call"}, {"Mcp-Name", "fs26.read"}}

// trivialUpstream answers every MCP request with a fixed result for its id
// (202 for a notification): an upstream that costs next to nothing. At
// /mcp it speaks MCP 2025 only; at /mcp26 MCP 2026-07-28 too (its
// server/discover offers it).
func trivialUpstream() (url string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if json.Unmarshal(body, &m) != nil || m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/mcp26" {
			if m.Method == "server/discover" {
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}}`))
				return
			}
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"resultType":"complete","content":[{"type":"text","text":"ok"}]}}`))
			return
		}
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[{"type":"text","text":"ok"}]}}`))
	})}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String() + "/mcp", func() { _ = srv.Close() }, nil
}

// gatewayRows measures an allowed tools/call through the MCP gateway
// (/mcp/fs, an agent token, an open MCP session; and /mcp/fs26, MCP
// 2026-07-28, no session) beside the same call sent to the upstream
// directly and through the two bare proxies (bareProxy), with o.conns
// connections each. The upstream runs in this process, so the gateway
// rows' CPU/req is agentauth's alone.
func gatewayRows(o options, bin, tmp string) error {
	upstream, stopUpstream, err := trivialUpstream()
	if err != nil {
		return err
	}
	defer stopUpstream()
	p, err := launch.Start(bin, serverEnv(filepath.Join(tmp, "gateway"), "SERVICE_API_KEY="+apiKey), 30*time.Second, "serve")
	if err != nil {
		return err
	}
	defer p.Kill()
	auth := header{"Authorization", "Bearer " + apiKey}
	var created struct {
		ID          string
		AccessToken string `json:"access_token"`
	}
	steps := []struct{ what, method, path, body string }{
		{"register the server", "POST", "/api/v2/servers", `{"name":"fs","url":"` + p.URL + `/mcp/fs","endpoint":"` + upstream + `"}`},
		{"register the tool", "POST", "/api/v2/tools", `{"name":"fs.read","server":"fs","read_only":true}`},
		{"register the 2026 server", "POST", "/api/v2/servers", `{"name":"fs26","url":"` + p.URL + `/mcp/fs26","endpoint":"` + upstream + `26"}`},
		{"register its tool", "POST", "/api/v2/tools", `{"name":"fs26.read","server":"fs26","read_only":true}`},
		{"allow them", "POST", "/api/v2/policies", `{"effect":"allow","tool":"fs*","scope":"role","value":"ADMIN"}`},
	}
	for _, st := range steps {
		if _, err := call(st.method, p.URL+st.path, st.body, auth); err != nil {
			return fmt.Errorf("gateway rows: %s: %w", st.what, err)
		}
	}
	body, err := call("POST", p.URL+"/api/v2/sessions", `{"title":"gateway","mode":"auto"}`, auth)
	if err == nil {
		err = json.Unmarshal(body, &created)
	}
	session := created.ID
	if err == nil {
		if body, err = call("POST", p.URL+"/api/v2/sessions/"+session+"/agents", `{}`, auth); err == nil {
			err = json.Unmarshal(body, &created)
		}
	}
	agent, token26 := created.ID, ""
	if err == nil {
		if body, err = call("POST", p.URL+"/api/v2/sessions/"+session+"/agents/"+agent+"/token", `{"audience":"fs26"}`, auth); err == nil {
			err = json.Unmarshal(body, &created)
			token26 = created.AccessToken
		}
	}
	if err == nil {
		if body, err = call("POST", p.URL+"/api/v2/sessions/"+session+"/agents/"+agent+"/token", `{"audience":"fs"}`, auth); err == nil {
			err = json.Unmarshal(body, &created)
		}
	}
	if err != nil {
		return fmt.Errorf("gateway rows: agent token: %w", err)
	}
	bearer := header{"Authorization", "Bearer " + created.AccessToken}
	accept := header{"Accept", "application/json, text/event-stream"}
	res, err := callFull("POST", p.URL+"/mcp/fs", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"loadgen","version":"1"}}}`, bearer)
	if err != nil {
		return fmt.Errorf("gateway rows: initialize: %w", err)
	}
	mcpSession := header{"Mcp-Session-Id", res.session}
	printHeader(fmt.Sprintf("MCP gateway, allowed tools/call, trivial upstream, %d connections", o.conns))
	proxied, proxy, stopProxy, err := bareProxy(stdlibProxy, upstream)
	if err != nil {
		return err
	}
	defer stopProxy()
	fastProxied, fastProxy, stopFastProxy, err := bareProxy(fasthttpProxy, upstream)
	if err != nil {
		return err
	}
	defer stopFastProxy()
	direct := drive(request{method: "POST", url: upstream, body: gatewayCall, header: accept}, o.conns, o.warmup, o.duration)
	bare := drive(request{method: "POST", url: proxied, body: gatewayCall, header: accept, server: proxy.Pid}, o.conns, o.warmup, o.duration)
	fast := drive(request{method: "POST", url: fastProxied, body: gatewayCall, header: accept, server: fastProxy.Pid}, o.conns, o.warmup, o.duration)
	gw := drive(request{method: "POST", url: p.URL + "/mcp/fs", body: gatewayCall, header: bearer, more: []header{accept, mcpSession},
		server: p.Cmd.Process.Pid}, o.conns, o.warmup, o.duration)
	gw26 := drive(request{method: "POST", url: p.URL + "/mcp/fs26", body: gatewayCall2026, header: header{"Authorization", "Bearer " + token26},
		more: append([]header{accept}, modernHeaders...), server: p.Cmd.Process.Pid}, o.conns, o.warmup, o.duration)
	fmt.Println(line("tools/call direct to the upstream", direct, direct.rps))
	fmt.Println(line("tools/call through a bare Go reverse proxy", bare, direct.rps))
	fmt.Println(line("tools/call through a bare fasthttp proxy", fast, direct.rps))
	fmt.Println(line("tools/call through /mcp/fs (MCP 2025)", gw, direct.rps))
	fmt.Println(line("tools/call through /mcp/fs26 (MCP 2026-07-28)", gw26, direct.rps))
	if fast.cpu > 0 {
		fmt.Printf("the gateway's CPU per call beside the bare fasthttp proxy's (its HTTP hops' floor): MCP 2025 %.1f×, MCP 2026-07-28 %.1f×\n",
			float64(gw.cpu)/float64(fast.cpu), float64(gw26.cpu)/float64(fast.cpu))
	}
	for name, r := range map[string]result{"direct": direct, "bare proxy": bare, "bare fasthttp proxy": fast, "gateway": gw, "gateway 2026": gw26} {
		if r.failed > 0 {
			return fmt.Errorf("gateway rows: %s: %d requests failed: %s", name, r.failed, r.lastErr)
		}
	}
	return nil
}
