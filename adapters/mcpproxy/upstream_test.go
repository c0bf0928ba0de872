package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/mcpwire"
	"github.com/agentauth/agentauth/ports"
)

// seen is what an upstream received of one request.
type seen struct {
	method, uri, body                                     string
	auth, accept, contentType, sessionID, protocolVersion string
	// mcpMethod, mcpName and mcpParam are the MCP 2026-07-28 headers
	// (mcpParam: Mcp-Param-Region).
	mcpMethod, mcpName, mcpParam string
}

// recorder serves answer and records what it received.
type recorder struct {
	mu   sync.Mutex
	reqs []seen
}

func (rc *recorder) handler(answer http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, seen{method: r.Method, uri: r.RequestURI, body: string(body), auth: r.Header.Get("Authorization"),
			accept: r.Header.Get("Accept"), contentType: r.Header.Get("Content-Type"),
			sessionID: r.Header.Get(mcpwire.HeaderSessionID), protocolVersion: r.Header.Get(mcpwire.HeaderProtocolVersion),
			mcpMethod: r.Header.Get(mcpwire.HeaderMethod), mcpName: r.Header.Get(mcpwire.HeaderName), mcpParam: r.Header.Get(mcpwire.HeaderParamPrefix + "Region")})
		rc.mu.Unlock()
		answer(w, r)
	}
}

func (rc *recorder) got() []seen {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]seen(nil), rc.reqs...)
}

// sse writes events, flushing each.
func sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		fmt.Fprintf(w, "data: %s\n\n", e)
		w.(http.Flusher).Flush()
	}
}

const (
	ask      = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{}}}`
	answer7  = `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`
	progress = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`
)

// TestPost: what Post sends upstream and how it reads each kind of
// answer, within its bounds.
func TestPost(t *testing.T) {
	limits := Limits{MaxBytes: 4 << 10, MaxMessages: 8}
	big := `{"jsonrpc":"2.0","id":7,"result":{"pad":"` + strings.Repeat("x", 5<<10) + `"}}`
	tests := []struct {
		name string
		// path is the endpoint's path (as registered, sent as is).
		path   string
		req    ports.MCPRequest
		id     json.RawMessage
		answer http.HandlerFunc
		want   ports.MCPReply
		// err is a part of the error's text; "" for none.
		err string
	}{
		{"a JSON answer", "/mcp", ports.MCPRequest{Credential: "up-token", SessionID: "s1", ProtocolVersion: "2025-06-18"}, json.RawMessage("7"),
			func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set(mcpwire.HeaderSessionID, "s2")
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				_, _ = io.WriteString(w, answer7)
			},
			ports.MCPReply{Status: 200, SessionID: "s2", ContentType: "application/json; charset=utf-8", Messages: []mcpwire.Message{mustParse(t, answer7)}}, ""},
		{"MCP 2026-07-28: the request's headers", "/mcp", ports.MCPRequest{ProtocolVersion: "2026-07-28", Method: "tools/call", Name: "t",
			Params: []ports.MCPParam{{Name: "Region", Value: "=?base64?IHBhZGRlZCA=?="}}}, json.RawMessage("7"),
			func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, answer7)
			},
			ports.MCPReply{Status: 200, ContentType: "application/json", Messages: []mcpwire.Message{mustParse(t, answer7)}}, ""},
		{"a JSON answer in chunks, no credential", "/a/../b//c%2Fd?x=1", ports.MCPRequest{}, json.RawMessage("7"),
			func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, answer7[:10])
				w.(http.Flusher).Flush()
				_, _ = io.WriteString(w, answer7[10:])
			},
			ports.MCPReply{Status: 200, ContentType: "application/json", Messages: []mcpwire.Message{mustParse(t, answer7)}}, ""},
		{"an SSE answer: notifications kept, requests and other responses dropped", "/mcp", ports.MCPRequest{}, json.RawMessage("7"),
			func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte(": priming\n\n"))
				sse(w, progress, `{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage"}`, `{"jsonrpc":"2.0","id":8,"result":{}}`, answer7, progress)
			},
			ports.MCPReply{Status: 200, ContentType: "text/event-stream", SSE: true, Messages: []mcpwire.Message{mustParse(t, progress), mustParse(t, answer7)}, Dropped: 2}, ""},
		{"a notification: 202", "/mcp", ports.MCPRequest{}, nil,
			func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) },
			ports.MCPReply{Status: 202, Body: []byte{}}, ""},
		{"a notification: 204, no body", "/mcp", ports.MCPRequest{}, nil,
			func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) },
			ports.MCPReply{Status: 204, Body: []byte{}}, ""},
		{"an error status: its body relayed", "/mcp", ports.MCPRequest{}, json.RawMessage("7"),
			func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusInternalServerError) },
			ports.MCPReply{Status: 500, ContentType: "text/plain; charset=utf-8", Body: []byte("no\n")}, ""},
		{"a redirect is not followed", "/mcp", ports.MCPRequest{Credential: "up-token"}, json.RawMessage("7"),
			func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Location", "/elsewhere")
				w.WriteHeader(http.StatusTemporaryRedirect)
			},
			ports.MCPReply{Status: 307, Body: []byte{}}, ""},
		{"the answer to another id", "/mcp", ports.MCPRequest{}, json.RawMessage("8"),
			func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, answer7)
			},
			ports.MCPReply{Status: 200, ContentType: "application/json"}, "not the response to id 8"},
		{"no content type", "/mcp", ports.MCPRequest{}, json.RawMessage("7"),
			func(w http.ResponseWriter, _ *http.Request) {
				w.Header()["Content-Type"] = nil
				_, _ = io.WriteString(w, answer7)
			},
			ports.MCPReply{Status: 200}, `answer of type ""`},
		{"a JSON answer too large", "/mcp", ports.MCPRequest{}, json.RawMessage("7"),
			func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, big)
			},
			ports.MCPReply{Status: 200, ContentType: "application/json"}, "answer over 4096 bytes"},
		{"a JSON answer too large, in chunks", "/mcp", ports.MCPRequest{}, json.RawMessage("7"),
			func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				for i := 0; i < len(big); i += 1000 {
					_, _ = io.WriteString(w, big[i:min(i+1000, len(big))])
					w.(http.Flusher).Flush()
				}
			},
			ports.MCPReply{Status: 200, ContentType: "application/json"}, "answer over 4096 bytes"},
		{"a JSON answer too large, without a length (to the end of the connection)", "/mcp", ports.MCPRequest{}, json.RawMessage("7"),
			func(w http.ResponseWriter, _ *http.Request) {
				conn, buf, _ := w.(http.Hijacker).Hijack()
				defer conn.Close()
				_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" + big)
				_ = buf.Flush()
			},
			ports.MCPReply{Status: 200, ContentType: "application/json"}, "answer over 4096 bytes"},
		{"an SSE stream too large: cut within an event", "/mcp", ports.MCPRequest{}, json.RawMessage("7"),
			func(w http.ResponseWriter, _ *http.Request) { sse(w, progress, big) },
			ports.MCPReply{Status: 200, ContentType: "text/event-stream", SSE: true, Messages: []mcpwire.Message{mustParse(t, progress)}}, "an event is not a JSON-RPC message"},
		{"too many SSE messages", "/mcp", ports.MCPRequest{}, json.RawMessage("7"),
			func(w http.ResponseWriter, _ *http.Request) {
				sse(w, progress, progress, progress, progress, progress, progress, progress, progress, progress)
			},
			ports.MCPReply{Status: 200, ContentType: "text/event-stream", SSE: true, Messages: repeat(mustParse(t, progress), 9)}, "over 8 messages"},
		{"an SSE stream that ends first", "/mcp", ports.MCPRequest{}, json.RawMessage("7"),
			func(w http.ResponseWriter, _ *http.Request) { sse(w, progress) },
			ports.MCPReply{Status: 200, ContentType: "text/event-stream", SSE: true, Messages: []mcpwire.Message{mustParse(t, progress)}}, "the stream ended before the response to id 7"},
		{"no answer in time", "/mcp", ports.MCPRequest{}, json.RawMessage("7"),
			func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			ports.MCPReply{}, "deadline exceeded"},
		{"no response in time on an SSE stream", "/mcp", ports.MCPRequest{}, json.RawMessage("7"),
			func(w http.ResponseWriter, r *http.Request) { sse(w, progress); <-r.Context().Done() },
			ports.MCPReply{Status: 200, ContentType: "text/event-stream", SSE: true, Messages: []mcpwire.Message{mustParse(t, progress)}}, "deadline exceeded"},
	}
	u := NewUpstream(limits)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := &recorder{}
			srv := httptest.NewServer(rc.handler(tt.answer))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			r := tt.req
			r.Endpoint, r.Body = srv.URL+tt.path, []byte(ask)
			got, err := u.Post(ctx, r, tt.id)
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tt.err != "" && (!errors.Is(err, ErrUpstream) || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("error %v, want ErrUpstream with %q", err, tt.err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("reply\n%+v, want\n%+v", got, tt.want)
			}
			wantSeen := seen{method: "POST", uri: tt.path, body: ask, auth: "", accept: "application/json, text/event-stream",
				contentType: "application/json", sessionID: tt.req.SessionID, protocolVersion: tt.req.ProtocolVersion,
				mcpMethod: tt.req.Method, mcpName: tt.req.Name}
			if len(tt.req.Params) > 0 {
				wantSeen.mcpParam = tt.req.Params[0].Value
			}
			if tt.req.Credential != "" {
				wantSeen.auth = "Bearer " + tt.req.Credential
			}
			if reqs := rc.got(); len(reqs) != 1 || reqs[0] != wantSeen {
				t.Errorf("the server saw %+v, want once %+v", reqs, wantSeen)
			}
		})
	}
}

// TestPostAfterAnOpenStream: a server that answers on an SSE stream and
// keeps it open; the next call on the same server gets its own answer.
func TestPostAfterAnOpenStream(t *testing.T) {
	release := make(chan struct{})
	var calls sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m mcpwire.Message
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &m)
		calls.Lock()
		n++
		first := n == 1
		calls.Unlock()
		if !first {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"n":2}}`))
			return
		}
		sse(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"n":1}}`)
		_, _ = io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nHTTP/1.1 200 OK\r\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release) // before the server closes
	u := NewUpstream(Limits{MaxBytes: 1 << 20, MaxMessages: 8})
	for i, want := range []string{`{"n":1}`, `{"n":2}`, `{"n":2}`} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		id := json.RawMessage(fmt.Sprint(i + 1))
		rep, err := u.Post(ctx, ports.MCPRequest{Endpoint: srv.URL, Body: []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"method":"ping"}`)}, id)
		cancel()
		if err != nil || len(rep.Messages) == 0 || string(rep.Messages[len(rep.Messages)-1].Result) != want {
			t.Fatalf("call %d: %+v, %v; want the result %s", i+1, rep, err, want)
		}
	}
}

func mustParse(t *testing.T, s string) mcpwire.Message {
	t.Helper()
	m, err := mcpwire.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func repeat(m mcpwire.Message, n int) []mcpwire.Message {
	out := make([]mcpwire.Message, n)
	for i := range out {
		out[i] = m
	}
	return out
}
