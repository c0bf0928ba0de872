package mcpwire

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// EventReader reads the data of SSE events, one at a time.
type EventReader struct {
	sc *bufio.Scanner
}

// maxEventBytes bounds one line of an event stream.
const maxEventBytes = 4 << 20

// NewEventReader reads events from r (bound r's total size yourself).
func NewEventReader(r io.Reader) *EventReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxEventBytes)
	return &EventReader{sc: sc}
}

// Next returns the data of the next event (its data lines joined by \n);
// comments, event names, ids and retry fields are skipped.
func (e *EventReader) Next() ([]byte, error) {
	var data []byte
	seen := false
	for e.sc.Scan() {
		line := e.sc.Bytes()
		if len(line) == 0 {
			if seen {
				return data, nil
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if string(field) != "data" {
			continue
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if seen {
			data = append(data, '\n')
		}
		data, seen = append(data, value...), true
	}
	if err := e.sc.Err(); err != nil {
		return nil, err
	}
	if seen {
		return data, nil
	}
	return nil, io.EOF
}

// WriteEvent writes one SSE message event.
func WriteEvent(w io.Writer, data []byte) error {
	_, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", data)
	return err
}
