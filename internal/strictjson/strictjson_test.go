package strictjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/internal/strictjson"
)

func TestUniqueNames(t *testing.T) {
	tests := []struct {
		name, body string
		want       error
		// where is what the error names (the key and its place).
		where string
	}{
		{"an object", `{"a":1,"b":{"c":[1,{"d":2}]}}`, nil, ""},
		{"the same name in two objects", `{"a":{"x":1},"b":{"x":2},"c":[{"x":1},{"x":2}]}`, nil, ""},
		{"a name as a value", `{"a":"a","b":["a","a"]}`, nil, ""},
		{"not an object", `[1,2,"x"]`, nil, ""},
		{"a scalar", `"x"`, nil, ""},
		{"spaces around", " \n{\"a\":1}\t ", nil, ""},
		{"one name twice", `{"a":1,"a":2}`, strictjson.ErrDuplicateName, `"a"`},
		{"differing in case", `{"name":"x","Name":"y"}`, strictjson.ErrDuplicateName, `"Name"`},
		{"differing in case, non-ASCII", `{"émoi":1,"ÉMOI":2}`, strictjson.ErrDuplicateName, `"ÉMOI"`},
		{"an escaped spelling", `{"name":"x","\u006eame":"y"}`, strictjson.ErrDuplicateName, `"name"`},
		{"deep in an array", `{"params":{"arguments":[{"p":1,"q":2,"p":3}]}}`, strictjson.ErrDuplicateName, `"p" at /params/arguments/0`},
		{"after a nested object", `{"a":{"b":1},"a":2}`, strictjson.ErrDuplicateName, `"a"`},
		{"empty", ``, strictjson.ErrSyntax, ""},
		{"not JSON", `{"a":}`, strictjson.ErrSyntax, ""},
		{"two values", `{"a":1}{"b":2}`, strictjson.ErrSyntax, "more than one"},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", strictjson.ErrSyntax, ""},
		{"cut short", `{"a":[1,2`, strictjson.ErrSyntax, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := strictjson.UniqueNames([]byte(tt.body))
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("UniqueNames(%s) = %v, want %v", tt.body, err, tt.want)
			}
			if err != nil && !strings.Contains(err.Error(), tt.where) {
				t.Errorf("error %q does not say %s", err, tt.where)
			}
		})
	}
}

// FuzzUniqueNames: any input is judged without a panic, and a text it
// accepts is one that encoding/json reads as one value.
func FuzzUniqueNames(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"A":2}`, `[{"x":{"y":[]}}]`, `{"\u0061":1,"a":2}`, `"x"`, `{"a":1}{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		err := strictjson.UniqueNames(body)
		if err == nil && !validOne(body) {
			t.Errorf("accepted %q, which encoding/json does not read as one value", body)
		}
		if (err == nil || errors.Is(err, strictjson.ErrDuplicateName)) && validOne(body) {
			if got, want := err != nil, namesTwice(body); got != want {
				t.Errorf("UniqueNames(%q) = %v; encoding/json's tokens name a member twice: %v", body, err, want)
			}
		}
	})
}

// namesTwice reports whether an object of body, one valid JSON value,
// names a member twice without regard to case, walking encoding/json's
// tokens: the reference UniqueNames is held to.
func namesTwice(body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	type open struct {
		object bool
		names  []string
	}
	var stack []open
	valueNext := false // in an object, the token after a name is its value
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		top := len(stack) - 1
		if name, ok := tok.(string); ok && top >= 0 && stack[top].object && !valueNext {
			for _, seen := range stack[top].names {
				if strings.EqualFold(seen, name) {
					return true
				}
			}
			stack[top].names = append(stack[top].names, name)
			valueNext = true
			continue
		}
		valueNext = false
		switch tok {
		case json.Delim('{'):
			stack = append(stack, open{object: true})
		case json.Delim('['):
			stack = append(stack, open{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:top]
		}
	}
}

// BenchmarkUniqueNames: a gateway tools/call.
func BenchmarkUniqueNames(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs.read","arguments":{"path":"/a"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := strictjson.UniqueNames(body); err != nil {
			b.Fatal(err)
		}
	}
}

// validOne reports whether encoding/json reads body as exactly one value.
func validOne(body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	var v json.RawMessage // syntax only: 1E1000 is JSON, though no float64
	if dec.Decode(&v) != nil {
		return false
	}
	_, err := dec.Token()
	return err == io.EOF
}
