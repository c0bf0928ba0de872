package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// Headers of the Streamable HTTP transport.
const (
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderProtocolVersion = "Mcp-Protocol-Version"
)

// Limits bound what an upstream may send for one request.
type Limits struct {
	// MaxBytes bounds a response body (JSON or the SSE stream up to the
	// answer).
	MaxBytes int64
	// MaxMessages bounds the messages of an SSE answer.
	MaxMessages int
}

// Upstream posts messages to MCP servers.
type Upstream struct {
	Client *http.Client
	Limits Limits
}

// NewUpstream is an Upstream with its own connection pool, sized for many
// concurrent callers to few servers.
func NewUpstream(limits Limits) *Upstream {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 512, 256
	tr.ResponseHeaderTimeout = 0 // the caller's context bounds the wait
	return &Upstream{Client: &http.Client{Transport: tr, CheckRedirect: noRedirect}, Limits: limits}
}

// noRedirect: a redirect would carry the upstream credential elsewhere.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Request is one message for an upstream server.
type Request struct {
	Endpoint string
	// Credential is the gateway's own token for the server ("" none); the
	// caller's credential is never passed on.
	Credential      string
	SessionID       string
	ProtocolVersion string
	Body            []byte
}

// Reply is what the server answered.
type Reply struct {
	Status      int
	SessionID   string
	ContentType string
	// SSE: the answer came as an event stream.
	SSE bool
	// Messages are the server's messages: for a request, the notifications
	// it sent first and its response last.
	Messages []Message
	// Dropped counts messages left out: requests of the server (the
	// gateway offers it none of sampling, elicitation or roots) and
	// responses to ids never asked.
	Dropped int
	// Body is a non-2xx answer's body (bounded), relayed as is.
	Body []byte
}

// ErrUpstream wraps every failure of the server: unreachable, timed out,
// too large, malformed.
var ErrUpstream = errors.New("upstream")

func (u *Upstream) newRequest(ctx context.Context, method string, r Request) (*http.Request, error) {
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.Endpoint, body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUpstream, err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if r.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.Credential != "" {
		req.Header.Set("Authorization", "Bearer "+r.Credential)
	}
	if r.SessionID != "" {
		req.Header.Set(HeaderSessionID, r.SessionID)
	}
	if r.ProtocolVersion != "" {
		req.Header.Set(HeaderProtocolVersion, r.ProtocolVersion)
	}
	return req, nil
}

// Post sends r upstream. For a request (id non-nil) it reads the answer up
// to the response with that id; for a notification or response it expects
// 202 Accepted.
func (u *Upstream) Post(ctx context.Context, r Request, id json.RawMessage) (Reply, error) {
	req, err := u.newRequest(ctx, http.MethodPost, r)
	if err != nil {
		return Reply{}, err
	}
	resp, err := u.Client.Do(req)
	if err != nil {
		return Reply{}, fmt.Errorf("%w: %v", ErrUpstream, err)
	}
	defer resp.Body.Close()
	rep := Reply{Status: resp.StatusCode, SessionID: resp.Header.Get(HeaderSessionID), ContentType: resp.Header.Get("Content-Type")}
	body := io.LimitReader(resp.Body, u.Limits.MaxBytes+1)
	if resp.StatusCode < 200 || resp.StatusCode > 299 || id == nil {
		rep.Body, err = io.ReadAll(body)
		if err == nil && int64(len(rep.Body)) > u.Limits.MaxBytes {
			err = fmt.Errorf("%w: answer over %d bytes", ErrUpstream, u.Limits.MaxBytes)
		}
		return rep, err
	}
	mt, _, _ := mime.ParseMediaType(rep.ContentType)
	switch mt {
	case "application/json":
		b, err := io.ReadAll(body)
		if err != nil {
			return rep, fmt.Errorf("%w: %v", ErrUpstream, err)
		}
		if int64(len(b)) > u.Limits.MaxBytes {
			return rep, fmt.Errorf("%w: answer over %d bytes", ErrUpstream, u.Limits.MaxBytes)
		}
		m, err := Parse(b)
		if err != nil || !m.IsResponse() || !SameID(m.ID, id) {
			return rep, fmt.Errorf("%w: the answer is not the response to id %s", ErrUpstream, id)
		}
		rep.Messages = []Message{m}
		return rep, nil
	case "text/event-stream":
		rep.SSE = true
		return rep, u.readUntilResponse(body, id, &rep)
	}
	return rep, fmt.Errorf("%w: answer of type %q, want application/json or text/event-stream", ErrUpstream, rep.ContentType)
}

// readUntilResponse reads SSE events until the response to id.
func (u *Upstream) readUntilResponse(body io.Reader, id json.RawMessage, rep *Reply) error {
	events := NewEventReader(body)
	for {
		data, err := events.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: the stream ended before the response to id %s", ErrUpstream, id)
		}
		if err != nil {
			return fmt.Errorf("%w: %v (over %d bytes?)", ErrUpstream, err, u.Limits.MaxBytes)
		}
		if len(data) == 0 {
			continue // a priming or keep-alive event
		}
		m, err := Parse(data)
		switch {
		case err != nil:
			return fmt.Errorf("%w: an event is not a JSON-RPC message: %v", ErrUpstream, err)
		case m.IsResponse() && SameID(m.ID, id):
			rep.Messages = append(rep.Messages, m)
			return nil
		case m.IsNotification():
			rep.Messages = append(rep.Messages, m)
		default:
			rep.Dropped++
		}
		if len(rep.Messages)+rep.Dropped > u.Limits.MaxMessages {
			return fmt.Errorf("%w: over %d messages before the response", ErrUpstream, u.Limits.MaxMessages)
		}
	}
}

// Delete ends the upstream session.
func (u *Upstream) Delete(ctx context.Context, r Request) (int, error) {
	req, err := u.newRequest(ctx, http.MethodDelete, r)
	if err != nil {
		return 0, err
	}
	resp, err := u.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUpstream, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Stream opens the server's own event stream (GET). The caller reads it
// with NewEventReader and closes it.
func (u *Upstream) Stream(ctx context.Context, r Request) (*http.Response, error) {
	req, err := u.newRequest(ctx, http.MethodGet, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := u.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUpstream, err)
	}
	return resp, nil
}

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
