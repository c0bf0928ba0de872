package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/adapters/auditjson"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
)

// gwPost posts one raw message to the gateway with token and, when set,
// the MCP session id.
func gwPost(t *testing.T, h *axHarness, server, token, session, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", h.url+"/mcp/"+server, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set(mcpwire.HeaderSessionID, session)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

const gwInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"raw","version":"1"}}}`

// gwOpen initializes an MCP session through the gateway and returns its id.
func gwOpen(t *testing.T, h *axHarness, server, token string) string {
	t.Helper()
	status, hdr, body := gwPost(t, h, server, token, "", gwInitialize)
	if status != 200 || hdr.Get(mcpwire.HeaderSessionID) == "" {
		t.Fatalf("initialize = %d %s (session %q)", status, body, hdr.Get(mcpwire.HeaderSessionID))
	}
	return hdr.Get(mcpwire.HeaderSessionID)
}

// rpcErrorOf reads the JSON-RPC error of a JSON or SSE answer.
func rpcErrorOf(body []byte) (code int, reason string) {
	if i := bytes.LastIndex(body, []byte("data: ")); bytes.HasPrefix(bytes.TrimSpace(body), []byte("event:")) && i >= 0 {
		body = bytes.TrimSpace(body[i+len("data: "):])
	}
	var m struct {
		Error struct {
			Code int `json:"code"`
			Data struct {
				Reason string `json:"reason_code"`
			} `json:"data"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &m)
	return m.Error.Code, m.Error.Data.Reason
}

// TestGatewayBadInput: each bad request gets its documented error, is
// audited as a denial and changes nothing; the upstream never sees it.
func TestGatewayBadInput(t *testing.T) {
	u := newGWUpstream(t)
	h := gwNew(t, 2*time.Second)
	session, agent, token := gwWorld(t, h, u)
	// Servers that hang and that flood, each with a token of its own.
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server sees the client go
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer hang.Close()
	defer close(stop)
	flood := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; r.Context().Err() == nil && i < 100_000; i++ {
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"n\":%d}}\n\n", i)
		}
	}))
	defer flood.Close()
	for name, url := range map[string]string{"hang": hang.URL, "flood": flood.URL} {
		h.must(t, 201, "adm", "POST", "/api/v2/servers", `{"name":"`+name+`","url":"http://127.0.0.1:9/`+name+`","endpoint":"`+url+`"}`)
		h.must(t, 201, "adm", "POST", "/api/v2/tools", `{"name":"`+name+`.tool","server":"`+name+`"}`)
	}
	hangToken := gwToken(t, h, session, agent, "hang")
	floodToken := gwToken(t, h, session, agent, "flood")
	otherToken := gwToken(t, h, session, agent, "other")
	mcpSession := gwOpen(t, h, "fs", token)
	before := h.snapshot(t)
	ran := len(u.ran())

	tests := []struct {
		name, server, token, session, body string
		status, code                       int
		reason                             string
		// upstream: the gateway let the message through and the server
		// failed (audited allow, with the reason); else a denial.
		upstream bool
	}{
		{"not JSON", "fs", token, mcpSession, `{"jsonrpc":`, 400, mcpwire.CodeParseError, domain.ReasonGatewayMalformed, false},
		{"not JSON-RPC 2.0", "fs", token, mcpSession, `{"jsonrpc":"1.0","id":1,"method":"ping"}`, 400, mcpwire.CodeInvalidRequest, domain.ReasonGatewayMalformed, false},
		{"null id", "fs", token, mcpSession, `{"jsonrpc":"2.0","id":null,"method":"ping"}`, 400, mcpwire.CodeInvalidRequest, domain.ReasonGatewayMalformed, false},
		{"batch", "fs", token, mcpSession, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, 400, mcpwire.CodeInvalidRequest, domain.ReasonGatewayBatch, false},
		{"a response never asked for", "fs", token, mcpSession, `{"jsonrpc":"2.0","id":7,"result":{}}`, 400, mcpwire.CodeInvalidRequest, domain.ReasonGatewayResponse, false},
		{"no session", "fs", token, "", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, 400, 0, "", false},
		{"unknown session", "fs", token, "0123456789abcdef0123456789abcdef", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, 404, 0, "", false},
		{"unknown server", "nope", token, mcpSession, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, 404, 0, "", false},
		{"token for another server", "fs", otherToken, mcpSession, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, 403, 0, "", false},
		{"hidden tool", "fs", token, mcpSession, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"secret.tool","arguments":{}}}`, 200, mcpwire.CodeDenied, domain.ReasonTokenToolNotGranted, false},
		{"tool name outside the charset", "fs", token, mcpSession, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fs read","arguments":{}}}`, 200, mcpwire.CodeDenied, domain.ReasonGatewayUnknown, false},
		{"arguments not an object", "fs", token, mcpSession, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fs.read","arguments":[1]}}`, 200, mcpwire.CodeInvalidParams, domain.ReasonGatewayMalformed, false},
		// A name twice could mean one call to the gateway and another to
		// a server that reads the first (see strictjson).
		{"a tool named twice", "fs", token, mcpSession, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fs.write","name":"fs.read","arguments":{}}}`, 400, mcpwire.CodeInvalidRequest, domain.ReasonGatewayMalformed, false},
		{"an argument named twice in another case", "fs", token, mcpSession, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fs.read","arguments":{"path":"/etc/passwd","Path":"/a"}}}`, 400, mcpwire.CodeInvalidRequest, domain.ReasonGatewayMalformed, false},
		{"a method named twice", "fs", token, mcpSession, `{"jsonrpc":"2.0","id":3,"method":"tools/call","\u006dethod":"ping","params":{"name":"fs.read","arguments":{}}}`, 400, mcpwire.CodeInvalidRequest, domain.ReasonGatewayMalformed, false},
		// A request sent as a notification (no id) gets no JSON-RPC answer,
		// and is neither decided nor relayed.
		{"a tool call sent as a notification", "fs", token, mcpSession, `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"fs.delete","arguments":{}}}`, 400, 0, domain.ReasonGatewayMalformed, false},
		{"a method not offered", "fs", token, mcpSession, `{"jsonrpc":"2.0","id":4,"method":"resources/list"}`, 200, mcpwire.CodeMethodNotFound, domain.ReasonGatewayMethod, false},
		{"an unsupported protocol version", "fs", token, mcpSession, `{"jsonrpc":"2.0","id":5,"method":"ping"}`, 400, mcpwire.CodeUnsupportedVersion, domain.ReasonGatewayProtoVersion, false},
		{"a server that hangs", "hang", hangToken, "", gwInitialize, 200, mcpwire.CodeUpstream, domain.ReasonGatewayUpstream, true},
		{"a server that floods", "flood", floodToken, "", gwInitialize, 200, mcpwire.CodeUpstream, domain.ReasonGatewayUpstream, true},
		{"too large", "fs", token, mcpSession, `{"jsonrpc":"2.0","id":6,"method":"ping","params":{"pad":"` + strings.Repeat("x", 70<<10) + `"}}`, 413, 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", h.url+"/mcp/"+tt.server, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tt.token)
			req.Header.Set("X-Request-ID", "bad-"+strings.ReplaceAll(tt.name, " ", "-"))
			if tt.session != "" {
				req.Header.Set(mcpwire.HeaderSessionID, tt.session)
			}
			if tt.reason == domain.ReasonGatewayProtoVersion {
				req.Header.Set(mcpwire.HeaderProtocolVersion, "1999-01-01")
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tt.status {
				t.Fatalf("status %d %s, want %d", res.StatusCode, body, tt.status)
			}
			if code, reason := rpcErrorOf(body); tt.code != 0 && (code != tt.code || reason != tt.reason) {
				t.Errorf("error %d %s (%s), want %d %s", code, reason, body, tt.code, tt.reason)
			}
			if tt.code == 0 && strings.Contains(string(body), `"jsonrpc"`) {
				t.Errorf("answered a JSON-RPC message %s; want the API's error", body)
			}
		})
	}
	// Audited, each as a denial.
	var page struct {
		Records []auditjson.Record `json:"records"`
	}
	h.do(t, "adm", "GET", "/api/v2/audit?limit=1000", "").decode(t, &page)
	for _, tt := range tests {
		id := "bad-" + strings.ReplaceAll(tt.name, " ", "-")
		found := false
		for _, rec := range page.Records {
			if rec.RequestID == id {
				found = true
				want := domain.AuditDeny
				if tt.upstream {
					want = domain.AuditAllow
				}
				if rec.Decision != string(want) || (tt.reason != "" && !strings.Contains(rec.Reason, tt.reason) && !strings.Contains(rec.Reason, "invalid_request")) {
					t.Errorf("%s: audited %s (%q), want %s with %s", tt.name, rec.Decision, rec.Reason, want, tt.reason)
				}
			}
		}
		if !found {
			t.Errorf("%s: no audit record", tt.name)
		}
	}
	if got := len(u.ran()); got != ran {
		t.Errorf("the server ran %v; bad input must not reach it", u.ran()[ran:])
	}
	// Nothing changed (the audit's own tables aside): a denied call is
	// recorded by its audit record alone.
	if before, after := withoutAudit(before), withoutAudit(h.snapshot(t)); before != after {
		t.Errorf("bad input changed the data:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// withoutAudit drops the audit tables from a snapshot.
func withoutAudit(snapshot string) string {
	var out []string
	skip := false
	for _, line := range strings.Split(snapshot, "\n") {
		if strings.HasSuffix(line, ":") && !strings.Contains(line, " ") {
			skip = strings.HasPrefix(line, "audit_")
		}
		if !skip {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
