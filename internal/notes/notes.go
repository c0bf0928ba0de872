// Package notes is the sample MCP server of the gateway's quick start and
// walkthrough (docs/gateway.md): a few named notes in memory behind three
// tools, on the official MCP Go SDK. notes.read only reads (readOnlyHint,
// so an import registers it read-only), notes.write adds or replaces a
// note, notes.delete removes one.
package notes

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool names, as the server lists them.
const (
	Read   = "notes.read"
	Write  = "notes.write"
	Delete = "notes.delete"
)

// Welcome is the note the server starts with.
const Welcome = "welcome"

// Store holds the notes and what the tools ran.
type Store struct {
	mu    sync.Mutex
	notes map[string]string
	ran   []string
}

// NewStore starts with the one note Welcome.
func NewStore() *Store {
	return &Store{notes: map[string]string{Welcome: "Hello from the notes server. Every call you make reaches it through agentauth."}}
}

// Ran lists the calls the tools ran, oldest first, as "tool name".
func (s *Store) Ran() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ran...)
}

type nameArgs struct {
	Name string `json:"name" jsonschema:"the note's name"`
}

type readArgs struct {
	Name string `json:"name,omitempty" jsonschema:"the note's name; none: list the notes"`
}

type writeArgs struct {
	Name string `json:"name" jsonschema:"the note's name"`
	Text string `json:"text" jsonschema:"the note's new text"`
}

func text(format string, a ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, a...)}}}
}

func refused(format string, a ...any) *mcp.CallToolResult {
	r := text(format, a...)
	r.IsError = true
	return r
}

// Server is the MCP server over s.
func Server(s *Store) *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "agentauth-notes", Version: "1.0.0"}, nil)
	destructive, additive := true, false
	mcp.AddTool(server, &mcp.Tool{Name: Read, Description: "Read a note by its name (no name: list the notes).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in readArgs) (*mcp.CallToolResult, any, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.ran = append(s.ran, Read+" "+in.Name)
			if in.Name == "" {
				names := make([]string, 0, len(s.notes))
				for n := range s.notes {
					names = append(names, n)
				}
				sort.Strings(names)
				return text("notes: %s", strings.Join(names, ", ")), nil, nil
			}
			t, ok := s.notes[in.Name]
			if !ok {
				return refused("no note named %q", in.Name), nil, nil
			}
			return text("%s", t), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: Write, Description: "Write a note: add it, or replace its text.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &additive}},
		func(_ context.Context, _ *mcp.CallToolRequest, in writeArgs) (*mcp.CallToolResult, any, error) {
			if in.Name == "" {
				return refused("a note needs a name"), nil, nil
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			s.ran = append(s.ran, Write+" "+in.Name)
			s.notes[in.Name] = in.Text
			return text("note %q written", in.Name), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: Delete, Description: "Delete a note.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive}},
		func(_ context.Context, _ *mcp.CallToolRequest, in nameArgs) (*mcp.CallToolResult, any, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.ran = append(s.ran, Delete+" "+in.Name)
			if _, ok := s.notes[in.Name]; !ok {
				return refused("no note named %q", in.Name), nil, nil
			}
			delete(s.notes, in.Name)
			return text("note %q deleted", in.Name), nil, nil
		})
	return server
}

// Handler serves the MCP server over s (Streamable HTTP). With a token it
// answers 401 to any request without "Authorization: Bearer <token>": the
// credential agentauth's gateway sends, which agents never hold.
func Handler(s *Store, token string) http.Handler {
	server := Server(s)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "this server answers agentauth's gateway only", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
