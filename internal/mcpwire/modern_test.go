package mcpwire

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestHeaderValues: the encoding examples of streamable-http.mdx ("Value
// Encoding"), both ways, and values a header may not carry.
func TestHeaderValues(t *testing.T) {
	tests := []struct{ value, header string }{
		{"us-west1", "us-west1"},
		{"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{" padded ", "=?base64?IHBhZGRlZCA=?="},
		{"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
		{"=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},
		{"", ""},
		{"get_weather", "get_weather"},
	}
	for _, tt := range tests {
		if got := EncodeHeaderValue(tt.value); got != tt.header {
			t.Errorf("EncodeHeaderValue(%q) = %q, want %q", tt.value, got, tt.header)
		}
		if got, ok := DecodeHeaderValue(tt.header); !ok || got != tt.value {
			t.Errorf("DecodeHeaderValue(%q) = %q, %t; want %q", tt.header, got, ok, tt.value)
		}
	}
	for _, bad := range []string{"a\nb", "caf\xc3\xa9", "=?base64?!!!?=", "\x7f"} {
		if got, ok := DecodeHeaderValue(bad); ok {
			t.Errorf("DecodeHeaderValue(%q) = %q; want refused", bad, got)
		}
	}
}

func TestIsModern(t *testing.T) {
	tests := []struct {
		header, meta string
		modern       bool
	}{
		{"", "", false},
		{"2025-06-18", "", false},
		{"2025-11-25", "", false},
		{"2026-07-28", "", true},
		{"2099-01-01", "", true},
		{"", "2026-07-28", true},
		{"2025-11-25", "2026-07-28", true},
	}
	for _, tt := range tests {
		if got := IsModern(tt.header, tt.meta); got != tt.modern {
			t.Errorf("IsModern(%q, %q) = %t", tt.header, tt.meta, got)
		}
	}
}

// TestMembers: a member set, added (with the objects on its way) or
// deleted in place, everything else byte for byte as it was.
func TestMembers(t *testing.T) {
	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":[1,{"b":2}]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}}},"requestState":"s"}}`
	tests := []struct {
		name, body string
		set        string // "" deletes
		path       []string
		want       string
	}{
		{"replace nested", call, `{}`, []string{"params", "_meta", MetaClientCapabilities},
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":[1,{"b":2}]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"requestState":"s"}}`},
		{"delete the last member", call, "", []string{"params", "requestState"},
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":[1,{"b":2}]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}}}}}`},
		{"delete the first member", call, "", []string{"params", "name"},
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"a":[1,{"b":2}]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}}},"requestState":"s"}}`},
		{"delete a missing member", call, "", []string{"params", "inputResponses"}, call},
		{"add to an object", call, `"x"`, []string{"params", "requestState2"},
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"requestState2":"x","name":"t","arguments":{"a":[1,{"b":2}]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}}},"requestState":"s"}}`},
		{"add params and _meta", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, `"2026-07-28"`, []string{"params", "_meta", MetaProtocolVersion},
			`{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}},"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
		{"add to an empty object, with white space", `{ "params" : { } }`, `1`, []string{"params", "_meta"}, `{ "params" : {"_meta":1 } }`},
		{"names matched without regard to case", `{"Params":{"_META":{"k":1}}}`, `2`, []string{"params", "_meta", "k"}, `{"Params":{"_META":{"k":2}}}`},
		{"delete with white space", `{ "a" : 1 , "b" : 2 }`, "", []string{"a"}, `{ "b" : 2 }`},
	}
	for _, tt := range tests {
		var got []byte
		var err error
		if tt.set == "" {
			got, err = DeleteMember([]byte(tt.body), tt.path...)
		} else {
			got, err = SetMember([]byte(tt.body), []byte(tt.set), tt.path...)
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: %s, %v\nwant %s", tt.name, got, err, tt.want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: not JSON: %s", tt.name, got)
		}
	}
	if v := MemberValue([]byte(call), "params", "_meta", MetaClientCapabilities); string(v) != `{"roots":{}}` {
		t.Errorf("MemberValue = %s", v)
	}
	if _, err := SetMember([]byte(`{"params":[1]}`), []byte(`1`), "params", "_meta"); err == nil {
		t.Error("SetMember through an array: want an error")
	}
}

func TestKeepCapabilities(t *testing.T) {
	got, err := KeepCapabilities(json.RawMessage(`{"roots":{"listChanged":true},"sampling":{},"elicitation":{"url":{}},"extensions":{"x/y":{}}}`), "elicitation")
	var m map[string]any
	_ = json.Unmarshal(got, &m)
	if err != nil || !reflect.DeepEqual(m, map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}) {
		t.Errorf("KeepCapabilities = %s, %v", got, err)
	}
	if _, err := KeepCapabilities(json.RawMessage(`[]`)); err == nil {
		t.Error("an array: want an error")
	}
}

// FuzzMembers: setting and deleting a member leaves valid JSON whose
// other members read as before.
func FuzzMembers(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"x":1}}}`), "params", "_meta")
	f.Add([]byte(`{ "a" : { "b" : [ 1 , 2 ] } , "c" : "}" }`), "a", "b")
	f.Add([]byte(`{}`), "a", "b")
	f.Fuzz(func(t *testing.T, body []byte, a, b string) {
		var before map[string]any
		if json.Unmarshal(body, &before) != nil || a == "" || b == "" {
			return
		}
		set, err := SetMember(body, []byte(`"value"`), a, b)
		if err == nil && !json.Valid(set) {
			t.Fatalf("SetMember(%s) = %s: not JSON", body, set)
		}
		if err == nil && string(MemberValue(set, a, b)) != `"value"` {
			t.Fatalf("SetMember(%s) = %s: the value is not there", body, set)
		}
		del, err := DeleteMember(body, a, b)
		if err != nil {
			return
		}
		var after map[string]any
		if err := json.Unmarshal(del, &after); err != nil {
			t.Fatalf("DeleteMember(%s) = %s: %v", body, del, err)
		}
		if MemberValue(del, a, b) != nil {
			t.Fatalf("DeleteMember(%s) = %s: still there", body, del)
		}
	})
}
