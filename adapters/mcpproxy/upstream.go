package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agentauth/agentauth/internal/mcpwire"
	"github.com/agentauth/agentauth/ports"
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
	// Client carries the server's own event streams (GET) and the ends
	// of sessions (DELETE), which the caller's context cancels.
	Client *http.Client
	Limits Limits
	// posts carries every POST, the gateway's path for each message:
	// fasthttp does the whole exchange on the calling goroutine, without
	// net/http's reader and writer goroutines per connection, channel
	// hand-offs and header maps (about 55 µs less server CPU per allowed
	// tools/call under loadgen). It sees the context's deadline only.
	posts *fasthttp.Client
}

// Bounds of the POST client (NewUpstream).
const (
	// maxHeaderBytes bounds the head of an answer (status line and
	// headers).
	maxHeaderBytes = 16 << 10
	// maxConnsPerServer bounds the connections to one server; a call
	// beyond them waits for one until its deadline.
	maxConnsPerServer = 1024
	// idleConnTimeout closes a kept connection unused this long, before
	// common servers' own keep-alive timeouts (5 s for Node.js and
	// uvicorn) close it under a call.
	idleConnTimeout = 2 * time.Second
)

// NewUpstream is an Upstream with its own connection pools, sized for
// many concurrent callers to few servers.
func NewUpstream(limits Limits) *Upstream {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 512, 256
	tr.ResponseHeaderTimeout = 0 // the caller's context bounds the wait
	return &Upstream{Client: &http.Client{Transport: tr, CheckRedirect: noRedirect}, Limits: limits,
		posts: &fasthttp.Client{
			Name:                "agentauth-gateway",
			MaxConnsPerHost:     maxConnsPerServer,
			MaxConnWaitTimeout:  time.Hour, // the call's deadline bounds the wait
			MaxIdleConnDuration: idleConnTimeout,
			// A message is sent once: a tools/call the server may have
			// run is never sent again.
			MaxIdemponentCallAttempts: 1,
			ReadBufferSize:            maxHeaderBytes,
			// The answer is read as a stream (an SSE answer is read up to
			// its response), bounded by Limits.MaxBytes.
			StreamResponseBody:     true,
			MaxResponseBodySize:    int(min(limits.MaxBytes, math.MaxInt32)),
			DisablePathNormalizing: true, // the endpoint as registered
			DialDualStack:          true,
			// Do follows no redirect: one would carry the upstream
			// credential elsewhere.
		}}
}

// noRedirect: a redirect would carry the upstream credential elsewhere.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// headers calls set with each header of r, the same for either client.
func headers(r ports.MCPRequest, set func(key, value string)) {
	set("Accept", "application/json, text/event-stream")
	if r.Body != nil {
		set("Content-Type", "application/json")
	}
	if r.Credential != "" {
		set("Authorization", "Bearer "+r.Credential)
	}
	if r.SessionID != "" {
		set(mcpwire.HeaderSessionID, r.SessionID)
	}
	if r.ProtocolVersion != "" {
		set(mcpwire.HeaderProtocolVersion, r.ProtocolVersion)
	}
	if r.Method != "" {
		set(mcpwire.HeaderMethod, r.Method)
	}
	if r.Name != "" {
		set(mcpwire.HeaderName, r.Name)
	}
	for _, p := range r.Params {
		set(mcpwire.HeaderParamPrefix+p.Name, p.Value)
	}
}

// ErrUpstream wraps every failure of the server: unreachable, timed out,
// too large, malformed.
var ErrUpstream = errors.New("upstream")

func (u *Upstream) newRequest(ctx context.Context, method string, r ports.MCPRequest) (*http.Request, error) {
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.Endpoint, body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUpstream, err)
	}
	headers(r, req.Header.Set)
	return req, nil
}

// Post sends r upstream. For a request (id non-nil) it reads the answer up
// to the response with that id; for a notification or response it expects
// 202 Accepted. ctx's deadline bounds the whole exchange; ctx must have one.
func (u *Upstream) Post(ctx context.Context, r ports.MCPRequest, id json.RawMessage) (ports.MCPReply, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return ports.MCPReply{}, fmt.Errorf("%w: a call without a deadline", ErrUpstream)
	}
	if err := ctx.Err(); err != nil {
		return ports.MCPReply{}, fmt.Errorf("%w: %v", ErrUpstream, err)
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(r.Endpoint)
	req.Header.SetMethod(fasthttp.MethodPost)
	headers(r, req.Header.Set)
	req.SetBodyRaw(r.Body)
	err := u.posts.DoDeadline(req, resp, deadline)
	// A body without a length (to the end of the connection) is read
	// whole, and fails over MaxResponseBodySize.
	tooLarge := errors.Is(err, fasthttp.ErrBodyTooLarge)
	if err != nil && !tooLarge {
		return ports.MCPReply{}, fmt.Errorf("%w: %v", ErrUpstream, lateAsDeadline(err))
	}
	stream := resp.BodyStream()
	if stream == nil { // a status without a body (204, 304)
		stream = bytes.NewReader(nil)
	}
	body := &answerBody{r: stream}
	defer func() {
		if !body.eof {
			// The rest of the answer is unread: the connection cannot
			// carry another call.
			resp.SetConnectionClose()
		}
		_ = resp.CloseBodyStream()
	}()
	resp.Header.SetNoDefaultContentType(true) // "" when the server sent none
	rep := ports.MCPReply{Status: resp.StatusCode(), SessionID: string(resp.Header.Peek(mcpwire.HeaderSessionID)), ContentType: string(resp.Header.ContentType())}
	if tooLarge {
		return rep, fmt.Errorf("%w: answer over %d bytes", ErrUpstream, u.Limits.MaxBytes)
	}
	return rep, u.readAnswer(io.LimitReader(body, u.Limits.MaxBytes+1), id, &rep)
}

// readAnswer reads the body of rep: a non-2xx answer's or a notification's
// as is, else the response to id (JSON or SSE).
func (u *Upstream) readAnswer(body io.Reader, id json.RawMessage, rep *ports.MCPReply) error {
	var err error
	if rep.Status < 200 || rep.Status > 299 || id == nil {
		rep.Body, err = io.ReadAll(body)
		if err == nil && int64(len(rep.Body)) > u.Limits.MaxBytes {
			err = fmt.Errorf("%w: answer over %d bytes", ErrUpstream, u.Limits.MaxBytes)
		}
		return err
	}
	switch mediaType(rep.ContentType) {
	case "application/json":
		b, err := io.ReadAll(body)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrUpstream, err)
		}
		if int64(len(b)) > u.Limits.MaxBytes {
			return fmt.Errorf("%w: answer over %d bytes", ErrUpstream, u.Limits.MaxBytes)
		}
		m, err := mcpwire.Parse(b)
		if err != nil || !m.IsResponse() || !mcpwire.SameID(m.ID, id) {
			return fmt.Errorf("%w: the answer is not the response to id %s", ErrUpstream, id)
		}
		rep.Messages = []mcpwire.Message{m}
		return nil
	case "text/event-stream":
		rep.SSE = true
		return u.readUntilResponse(body, id, rep)
	}
	return fmt.Errorf("%w: answer of type %q, want application/json or text/event-stream", ErrUpstream, rep.ContentType)
}

// mediaType is the media type of a Content-Type value, lower case; the
// two an MCP server answers are recognized without parsing.
func mediaType(contentType string) string {
	switch contentType {
	case "application/json", "text/event-stream":
		return contentType
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt
}

// answerBody reads the body of an answer: it notes whether the body was
// read to its end, and reports the deadline's passing as
// context.DeadlineExceeded, whichever read it stopped.
type answerBody struct {
	r   io.Reader
	eof bool
}

func (b *answerBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, lateAsDeadline(err)
}

// lateAsDeadline is context.DeadlineExceeded for an error of the
// connection's deadline, else err.
func lateAsDeadline(err error) error {
	if err == nil || err == io.EOF {
		return err // most reads: nothing to look into (errors.As allocates)
	}
	var t interface{ Timeout() bool }
	if errors.As(err, &t) && t.Timeout() {
		return context.DeadlineExceeded
	}
	return err
}

// readUntilResponse reads SSE events until the response to id.
func (u *Upstream) readUntilResponse(body io.Reader, id json.RawMessage, rep *ports.MCPReply) error {
	events := mcpwire.NewEventReader(body)
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
		m, err := mcpwire.Parse(data)
		switch {
		case err != nil:
			return fmt.Errorf("%w: an event is not a JSON-RPC message: %v", ErrUpstream, err)
		case m.IsResponse() && mcpwire.SameID(m.ID, id):
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
func (u *Upstream) Delete(ctx context.Context, r ports.MCPRequest) (int, error) {
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

// Stream opens the server's own event stream (GET). The caller closes it.
func (u *Upstream) Stream(ctx context.Context, r ports.MCPRequest) (ports.MCPStream, error) {
	req, err := u.newRequest(ctx, http.MethodGet, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := u.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUpstream, err)
	}
	return &stream{resp: resp, events: mcpwire.NewEventReader(resp.Body)}, nil
}

// stream is a server's event stream (ports.MCPStream).
type stream struct {
	resp   *http.Response
	events *mcpwire.EventReader
}

func (s *stream) Status() int           { return s.resp.StatusCode }
func (s *stream) Next() ([]byte, error) { return s.events.Next() }
func (s *stream) Close() error          { return s.resp.Body.Close() }
