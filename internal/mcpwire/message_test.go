package mcpwire

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		body string
		kind string // request, notification, response; "" for an error
		err  error
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, "request", nil},
		{`{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}`, "request", nil},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "notification", nil},
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, "response", nil},
		{`{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}`, "response", nil},
		{` [{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "", ErrBatch},
		{`{"jsonrpc":`, "", ErrParse},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, "", ErrInvalid},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, "", ErrInvalid},
		{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, "", ErrInvalid},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}`, "", ErrInvalid},
		{`{"jsonrpc":"2.0","id":1}`, "", ErrInvalid},
		{`{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`, "", ErrInvalid},
		{`{"jsonrpc":"2.0"}`, "", ErrInvalid},
	}
	for _, tt := range tests {
		m, err := Parse([]byte(tt.body))
		kind := ""
		switch {
		case err != nil:
		case m.IsRequest():
			kind = "request"
		case m.IsNotification():
			kind = "notification"
		case m.IsResponse():
			kind = "response"
		}
		if kind != tt.kind || !errors.Is(err, tt.err) && tt.err != nil || (tt.err == nil && err != nil) {
			t.Errorf("Parse(%s) = %s, %v; want %s, %v", tt.body, kind, err, tt.kind, tt.err)
		}
	}
	if got, want := Code(ErrBatch), CodeInvalidRequest; got != want {
		t.Errorf("Code(ErrBatch) = %d, want %d", got, want)
	}
	if got, want := Code(ErrParse), CodeParseError; got != want {
		t.Errorf("Code(ErrParse) = %d, want %d", got, want)
	}
}

func TestEventReader(t *testing.T) {
	stream := ": ok\n\nevent: message\nid: 1\ndata: {\"a\":1}\n\ndata: line1\ndata:line2\n\nretry: 10\n\ndata: last"
	r := NewEventReader(strings.NewReader(stream))
	var got []string
	for {
		data, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(data))
	}
	want := []string{`{"a":1}`, "line1\nline2", "last"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", got, want)
	}
}

// FuzzParse: Parse and ParseParams read every input as encoding/json
// reads it (the same value, or both refuse it), and what they read does
// not share the input's bytes.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs.read","arguments":{"path":"/a"}}}`,
		`{"jsonrpc":"2.0","id":"a\"}","result":{"content":[{"type":"text","text":"ok \\ \" } ]"}]}}`,
		` { "jsonrpc" : "2.0" , "id" : -1.5e3 , "error" : { "code" : 1 } , "x" : [ { } , [ ] , "}" ] } `,
		`{"jsonrpc":"2.0","method":"ping","method":"tools/list","id":1,"id":2}`,
		`{"jsonrpc":"2.0","Method":"ping","id":1}`,
		`{"jsonrpc":"2.0","METHOD":"ping","iD":1}`,
		`{"jsonrpc":"2.0","\u006dethod":"ping","id":1}`,
		`{"jsonrpc":"2.0","method":"p\u0069ng","id":1}`,
		`{"jsonrpc":"2.0","method":"pïng","id":1}`,
		`{"jsonrpc":"2.0","method":null,"id":1}`,
		`{"jsonrpc":"2.0","method":"ping","id":null}`,
		`{"jsonrpc":"2.0","method":"ping","params":null,"id":1}`,
		`{"jsonrpc":2,"method":"ping","id":1}`,
		`{"jsonrpc":"2.0","method":"ping","id":true}`,
		`{"jsonrpc":"2.0","method":"ping","id":1,"ſ":1,"K":2,"jsonrpc\u0000":3}`,
		`{"jsonrpc":"2.0","method":"ping","id":1}  x`,
		`{}`, `[]`, `"x"`, `1`, `null`, ``, `{`, `{"jsonrpc":"2.0",}`,
		`{"name":"fs.read","arguments":{"path":"/a"}}`,
		`{"name":"fs.read","arguments":null}`,
		`{"name":"fs.read","Name":"x","arguments":[1]}`,
		`{"arguments":{},"name":"a\u0062"}`,
		`{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}}},"requestState":"s","inputResponses":{"k":{"action":"accept"}}}`,
		`{"uri":"file:///a","_META":{"IO.modelcontextprotocol/PROTOCOLVERSION":"x"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var wantM Message
		var wantP Params
		stdM, stdP := json.Unmarshal(body, &wantM), json.Unmarshal(body, &wantP)
		m, errM := Parse(body)
		p, errP := ParseParams(body)
		switch {
		case stdM != nil && !errors.Is(errM, ErrParse) && !errors.Is(errM, ErrBatch):
			t.Fatalf("Parse(%q) = %v, encoding/json refused it: %v", body, errM, stdM)
		case stdM == nil && errors.Is(errM, ErrParse):
			t.Fatalf("Parse(%q) = %v, encoding/json read it", body, errM)
		case errM == nil && !reflect.DeepEqual(m, wantM):
			t.Fatalf("Parse(%q) = %#v, encoding/json read %#v", body, m, wantM)
		case (errP == nil) != (stdP == nil) && len(body) > 0: // no params read as none
			t.Fatalf("ParseParams(%q) error %v, encoding/json's %v", body, errP, stdP)
		case errP == nil && !reflect.DeepEqual(p, wantP):
			t.Fatalf("ParseParams(%q) = %#v, encoding/json read %#v", body, p, wantP)
		}
		read := fmt.Sprintf("%#v %#v", m, p)
		for i := range body {
			body[i] = 'x'
		}
		if fmt.Sprintf("%#v %#v", m, p) != read {
			t.Fatalf("what was read of %q shares the body's bytes", body)
		}
	})
}
