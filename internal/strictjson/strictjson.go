// Package strictjson refuses JSON texts that different readers could read
// differently: one object naming a member twice. encoding/json keeps the
// last of two and matches names without regard to case, other readers keep
// the first or match case exactly, so a body naming "name" twice, or
// "name" and "Name", would mean one thing to agentauth and another to a
// proxy in front or a tool server behind. The REST API and the MCP gateway
// refuse such bodies before reading them.
//
// It reads with github.com/go-json-experiment/json's jsontext (the
// tokenizer of encoding/json/v2), which also refuses invalid UTF-8 and
// invalid JSON, at a third of the cost of a walk over encoding/json's
// tokens (BenchmarkUniqueNames).
package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// ErrDuplicateName is wrapped by the error of a text whose object names a
// member twice.
var ErrDuplicateName = errors.New("duplicate key")

// ErrSyntax is wrapped by the error of a text that is not JSON.
var ErrSyntax = errors.New("invalid JSON")

// UniqueNames checks that body is one JSON value in which no object names
// a member twice, at any depth, names compared as encoding/json matches
// them: unescaped, then without regard to case. Its error says which name,
// and where.
func UniqueNames(body []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowDuplicateNames(true))
	// names holds, per object open, the names read so far; an array holds
	// an empty entry.
	var names [][]string
	for values := 0; ; {
		tok, err := dec.ReadToken()
		if errors.Is(err, io.EOF) && values == 1 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrSyntax, err)
		}
		if dec.StackDepth() == 0 {
			if values++; values > 1 {
				return fmt.Errorf("%w: more than one JSON value", ErrSyntax)
			}
		}
		switch tok.Kind() {
		case jsontext.KindBeginObject, jsontext.KindBeginArray:
			names = append(names, nil)
		case jsontext.KindEndObject, jsontext.KindEndArray:
			names = names[:len(names)-1]
		case jsontext.KindString:
			// In an object, a name is the 1st, 3rd, … token read.
			if kind, n := dec.StackIndex(dec.StackDepth()); kind == jsontext.KindBeginObject && n%2 == 1 {
				name, top := tok.String(), len(names)-1
				for _, seen := range names[top] {
					if strings.EqualFold(seen, name) {
						return fmt.Errorf("%w %q at %s", ErrDuplicateName, name, dec.StackPointer())
					}
				}
				names[top] = append(names[top], name)
			}
		}
	}
}
