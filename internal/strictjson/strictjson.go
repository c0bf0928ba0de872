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
	"sync"

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
	r := readers.Get().(*reader)
	defer readers.Put(r)
	return r.check(body)
}

// readers keeps decoders and their name buffers between calls: a check
// then allocates nothing.
var readers = sync.Pool{New: func() any { return new(reader) }}

// reader is one check's state: the names of the objects open, unescaped,
// one after another in names, each ending at its entry in ends; opens
// holds, per object or array open, where its entries in ends start.
type reader struct {
	src   bytes.Buffer
	dec   jsontext.Decoder
	names []byte
	ends  []int
	opens []int
}

func (r *reader) check(body []byte) error {
	// A bytes.Buffer is read in place, not copied (jsontext.NewDecoder).
	r.src = *bytes.NewBuffer(body)
	r.dec.Reset(&r.src, jsontext.AllowDuplicateNames(true))
	r.names, r.ends, r.opens = r.names[:0], r.ends[:0], r.opens[:0]
	defer r.forget()
	for values := 0; ; {
		if depth := r.dec.StackDepth(); depth > 0 {
			// In an object, a name is the 1st, 3rd, … token.
			if kind, n := r.dec.StackIndex(depth); kind == jsontext.KindBeginObject && n%2 == 0 && r.dec.PeekKind() == '"' {
				if err := r.name(); err != nil {
					return err
				}
				continue
			}
		}
		tok, err := r.dec.ReadToken()
		if errors.Is(err, io.EOF) && values == 1 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrSyntax, err)
		}
		if r.dec.StackDepth() == 0 {
			if values++; values > 1 {
				return fmt.Errorf("%w: more than one JSON value", ErrSyntax)
			}
		}
		switch tok.Kind() {
		case jsontext.KindBeginObject, jsontext.KindBeginArray:
			r.opens = append(r.opens, len(r.ends))
		case jsontext.KindEndObject, jsontext.KindEndArray:
			top := r.opens[len(r.opens)-1]
			r.opens = r.opens[:len(r.opens)-1]
			r.ends = r.ends[:top]
			r.names = r.names[:r.end(top-1)]
		}
	}
}

// forget drops every reference to the body read, so the pool keeps no
// request's bytes, and a name buffer grown by a large body.
func (r *reader) forget() {
	r.src = bytes.Buffer{}
	r.dec.Reset(&r.src)
	if cap(r.names) > 64<<10 {
		r.names = nil
	}
	clear(r.names[:cap(r.names)])
}

// name reads the next object name and refuses it if the object named it
// before.
func (r *reader) name() error {
	raw, err := r.dec.ReadValue()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	start := len(r.names)
	if r.names, err = jsontext.AppendUnquote(r.names, raw); err != nil {
		return fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	name := r.names[start:]
	top := r.opens[len(r.opens)-1]
	for i := top; i < len(r.ends); i++ {
		if bytes.EqualFold(r.names[r.end(i-1):r.ends[i]], name) {
			return fmt.Errorf("%w %q at %s", ErrDuplicateName, name, r.dec.StackPointer())
		}
	}
	r.ends = append(r.ends, len(r.names))
	return nil
}

// end is where the i-th name ends in names; the names start at 0.
func (r *reader) end(i int) int {
	if i < 0 {
		return 0
	}
	return r.ends[i]
}
