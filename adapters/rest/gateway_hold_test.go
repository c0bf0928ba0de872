package rest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
)

// eventually waits, up to 10 s, until cond holds (a ticker reads the state
// another goroutine changes; nothing sleeps for a guess).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not within 10s", what)
		}
	}
}

// gwHeld posts body (a call that asks) in mcpSession on a connection of
// its own and returns the held stream once its head is read: it stays
// open until closed.
func gwHeld(t *testing.T, h *axHarness, token, mcpSession, body string) io.ReadCloser {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	req, _ := http.NewRequest("POST", h.url+"/mcp/fs", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcpwire.HeaderSessionID, mcpSession)
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil || res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("the held call's answer: %+v, %v", res, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{res.Body, conn}
}

// withdrawn waits until call is withdrawn, by who, and checks that
// approving it then answers 409.
func withdrawn(t *testing.T, h *axHarness, session, call, by string) {
	t.Helper()
	var c domain.ToolCall
	eventually(t, "call "+call+" withdrawn", func() bool {
		c, _ = h.store.GetToolCall(context.Background(), call)
		return c.Status == domain.CallWithdrawn
	})
	if c.ResolvedBy != by {
		t.Errorf("call %s withdrawn by %q, want %q", call, c.ResolvedBy, by)
	}
	if r := h.do(t, "uma", "POST", "/api/v2/sessions/"+session+"/tool-calls/"+call+"/approve", ""); r.status != 409 {
		t.Errorf("approving the withdrawn call: %d %s, want 409", r.status, r.body)
	}
}

// TestGatewayHeldCallLivesWhileSomeoneWaits: a call held for approval is
// withdrawn once nobody waits for it: its 2025 client cancelled it
// (notifications/cancelled, as the Go SDK sends when the caller gives up),
// went away, or the hold ended, which gets its own code; a 2026 client's
// call is withdrawn once its requestState has lapsed. Approving it then
// answers 409, and the server never runs it.
func TestGatewayHeldCallLivesWhileSomeoneWaits(t *testing.T) {
	u := newGWUpstream(t)
	h := gwNew(t, 10*time.Second)
	session, _, token := gwWorld(t, h, u)

	t.Run("cancelled", func(t *testing.T) {
		// To a 2025 server, and to a 2026-07-28 one (which gets no
		// notification: the gateway takes it). The held stream stays open
		// meanwhile, so only the notification can withdraw the call.
		for _, u := range []*gwUpstream{u, newGWUpstreamOf(t, true)} {
			h := gwNew(t, 10*time.Second)
			session, _, token := gwWorld(t, h, u)
			mcpSession := gwOpen(t, h, "fs", token)
			stream := gwHeld(t, h, token, mcpSession, `{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"fs.write","arguments":{"path":"/cancelled"}}}`)
			call := gwPending(t, h, session, "fs.write")
			if status, _, body := gwPost(t, h, "fs", token, mcpSession, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41,"reason":"gave up"}}`); status != 202 {
				t.Fatalf("notifications/cancelled = %d %s", status, body)
			}
			withdrawn(t, h, session, call, "the client cancelled it")
			// A cancelled request gets no answer: the stream ends.
			rest, _ := io.ReadAll(stream)
			if strings.Contains(string(rest), "data:") {
				t.Errorf("the cancelled call was answered: %s", rest)
			}
			if ran := u.ran(); len(ran) > 0 {
				t.Errorf("the server ran %v", ran)
			}
		}
	})

	t.Run("the SDK gives up", func(t *testing.T) {
		// The Go SDK both sends notifications/cancelled and closes the
		// stream: either withdraws the call first.
		cs, err := gwConnect(context.Background(), h, "fs", token, gwLegacy)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		ctx, giveUp := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.write", Arguments: map[string]any{"path": "/given-up"}})
			done <- err
		}()
		call := gwPending(t, h, session, "fs.write")
		giveUp()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("the call the client gave up on: %v", err)
		}
		var c domain.ToolCall
		eventually(t, "call "+call+" withdrawn", func() bool {
			c, _ = h.store.GetToolCall(context.Background(), call)
			return c.Status == domain.CallWithdrawn
		})
		if c.ResolvedBy != "the client cancelled it" && c.ResolvedBy != "the client went away" {
			t.Errorf("withdrawn by %q", c.ResolvedBy)
		}
		if r := h.do(t, "uma", "POST", "/api/v2/sessions/"+session+"/tool-calls/"+call+"/approve", ""); r.status != 409 {
			t.Errorf("approving the withdrawn call: %d %s, want 409", r.status, r.body)
		}
	})

	t.Run("client gone", func(t *testing.T) {
		mcpSession := gwOpen(t, h, "fs", token)
		stream := gwHeld(t, h, token, mcpSession, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"fs.write","arguments":{"path":"/gone"}}}`)
		call := gwPending(t, h, session, "fs.write")
		stream.Close()
		withdrawn(t, h, session, call, "the client went away")
	})

	t.Run("hold ended", func(t *testing.T) {
		h := gwNew(t, 10*time.Second, func(s *app.MCPSettings) { s.AskTimeout = time.Nanosecond })
		session, _, token := gwWorld(t, h, u)
		cs, err := gwConnect(context.Background(), h, "fs", token, gwLegacy)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fs.write", Arguments: map[string]any{"path": "/late"}})
		if code, reason := gwRPCError(t, err); code != mcpwire.CodeApprovalTimeout || reason != domain.ReasonGatewayTimeout {
			t.Errorf("the hold's end: error %d %s (%v), want %d %s", code, reason, err, mcpwire.CodeApprovalTimeout, domain.ReasonGatewayTimeout)
		}
		var list struct {
			ToolCalls []struct{ ID, Status string } `json:"tool_calls"`
		}
		h.do(t, "uma", "GET", "/api/v2/sessions/"+session+"/tool-calls", "").decode(t, &list)
		if len(list.ToolCalls) != 1 {
			t.Fatalf("tool calls %+v, want the one held", list.ToolCalls)
		}
		withdrawn(t, h, session, list.ToolCalls[0].ID, "agentauth: the hold ended")

		// A 2026 client: the call asks, its requestState lapses at once;
		// the retry is refused with the hold's end, the call withdrawn.
		cs26 := gw2026Client(t, h, session, gwToken(t, h, session, h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/agents", "")["id"].(string), "fs"), "")
		_, err = cs26.CallTool(context.Background(), &mcp.CallToolParams{Name: "fs.write", Arguments: map[string]any{"path": "/late"}})
		if code, reason := gwRPCError(t, err); code != mcpwire.CodeApprovalTimeout || reason != domain.ReasonGatewayTimeout {
			t.Errorf("2026, the hold's end: error %d %s (%v)", code, reason, err)
		}
		h.do(t, "uma", "GET", "/api/v2/sessions/"+session+"/tool-calls", "").decode(t, &list)
		if len(list.ToolCalls) != 2 {
			t.Fatalf("tool calls %+v, want the two held", list.ToolCalls)
		}
		withdrawn(t, h, session, list.ToolCalls[0].ID, "agentauth: the hold ended")
	})

	for _, r := range u.ran() {
		t.Errorf("the server ran %s, which nobody waited for", r)
	}
}
