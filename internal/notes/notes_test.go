package notes

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

func connect(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "notes-test", Version: "1.0.0"}, nil)
	return client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer(token)}}, nil)
}

// TestServer: the official Go SDK's client lists the three tools (only
// notes.read read-only, as an import registers them) and calls them; the
// server refuses a caller without its credential.
func TestServer(t *testing.T) {
	store := NewStore()
	srv := httptest.NewServer(Handler(store, "upstream-secret"))
	defer srv.Close()

	if _, err := connect(t, srv.URL, "wrong"); err == nil {
		t.Fatal("connected with a wrong credential")
	}
	s, err := connect(t, srv.URL, "upstream-secret")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tools, err := s.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var readOnly []string
	for _, tl := range tools.Tools {
		if tl.Annotations != nil && tl.Annotations.ReadOnlyHint {
			readOnly = append(readOnly, tl.Name)
		}
	}
	if len(tools.Tools) != 3 || !slices.Equal(readOnly, []string{Read}) {
		t.Errorf("tools %v, read-only %v; want three, %s alone read-only", tools.Tools, readOnly, Read)
	}

	calls := []struct {
		tool    string
		args    map[string]any
		want    string
		isError bool
	}{
		{Read, map[string]any{"name": Welcome}, "Hello from the notes server. Every call you make reaches it through agentauth.", false},
		{Write, map[string]any{"name": "todo", "text": "buy milk"}, `note "todo" written`, false},
		{Read, map[string]any{}, "notes: todo, welcome", false},
		{Read, map[string]any{"name": "todo"}, "buy milk", false},
		{Write, map[string]any{"name": "", "text": "no name"}, "a note needs a name", true},
		{Delete, map[string]any{"name": "todo"}, `note "todo" deleted`, false},
		{Delete, map[string]any{"name": "todo"}, `no note named "todo"`, true},
		{Read, map[string]any{"name": "todo"}, `no note named "todo"`, true},
	}
	for _, c := range calls {
		r, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s %v: %v", c.tool, c.args, err)
		}
		if got := r.Content[0].(*mcp.TextContent).Text; got != c.want || r.IsError != c.isError {
			t.Errorf("%s %v = %q (error %v), want %q (error %v)", c.tool, c.args, got, r.IsError, c.want, c.isError)
		}
	}
	want := []string{"notes.read welcome", "notes.write todo", "notes.read ", "notes.read todo", "notes.delete todo", "notes.delete todo", "notes.read todo"}
	if got := store.Ran(); !slices.Equal(got, want) {
		t.Errorf("ran %q, want %q", got, want)
	}
}
