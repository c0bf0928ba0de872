package mcpwire

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestToolDefinition: the definition members only, canonical (RFC 8785),
// whatever their order and spacing; a member outside the definition
// (_meta, icons) changes nothing.
func TestToolDefinition(t *testing.T) {
	a := ToolDefinition(json.RawMessage(`{"name":"fs.read","description":"Read a file.","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}},"_meta":{"at":1}}`))
	b := ToolDefinition(json.RawMessage(`{ "inputSchema" : {"properties":{"path":{"type":"string"}},"type":"object"}, "_meta":{"at":2}, "icons":[], "description":"Read a file.", "name":"fs.read" }`))
	want := `{"description":"Read a file.","inputSchema":{"properties":{"path":{"type":"string"}},"type":"object"},"name":"fs.read"}`
	if a != want || b != want {
		t.Errorf("definitions:\n%s\n%s\nwant %s", a, b, want)
	}
	if c := ToolDefinition(json.RawMessage(`{"name":"fs.read","description":"Read a file!"}`)); c == a {
		t.Error("another description gave the same definition")
	}
	if got := ToolDefinition(json.RawMessage(`[1]`)); got != "" {
		t.Errorf("a tool that is no object: %q, want none", got)
	}
}

// BenchmarkToolDefinition: what pinning adds to each listed tool of a
// tools/list the gateway relays (then a SHA-256 of the result).
func BenchmarkToolDefinition(b *testing.B) {
	tool := json.RawMessage(fmt.Sprintf(`{"name":"notes.write","title":"Write a note","description":%q,"inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"where"},"text":{"type":"string"},"mode":{"type":"string","enum":["append","replace"]}},"required":["path","text"]},"annotations":{"readOnlyHint":false,"destructiveHint":true}}`,
		"Writes a note to the notes folder, creating it when it does not exist; the text replaces the note's or is appended."))
	b.ReportAllocs()
	for b.Loop() {
		if ToolDefinition(tool) == "" {
			b.Fatal("no definition")
		}
	}
}
