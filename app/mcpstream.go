package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentauth/agentauth/internal/mcpwire"
	"github.com/agentauth/agentauth/ports"
)

// MCPRelay is a server's own event stream relayed to the client: only its
// notifications (the gateway relays no server request), each within the
// message size, until the stream, the session or StreamTimeout ends.
type MCPRelay struct {
	stream ports.MCPStream
	limit  int64
	end    func()
}

// Next returns the next notification to relay; an error ends the relay.
func (r *MCPRelay) Next() ([]byte, error) {
	for {
		data, err := r.stream.Next()
		if err != nil {
			return nil, err
		}
		m, err := mcpwire.Parse(data)
		if err != nil || !m.IsNotification() || int64(len(data)) > r.limit {
			continue
		}
		return data, nil
	}
}

// Close ends the relay, upstream too.
func (r *MCPRelay) Close() {
	_ = r.stream.Close()
	r.end()
}

// inSession starts x and finds the caller's MCP session.
func (s *MCPGateway) inSession(ctx context.Context, x *exchange) error {
	if err := s.start(ctx, x); err != nil {
		return err
	}
	if err := s.mcpSession(x); err != nil {
		x.refuse(x.answer.Reason)
		return err
	}
	return nil
}

// Get relays the server's own event stream (GET) of the caller's session,
// for at most StreamTimeout.
func (s *MCPGateway) Get(ctx context.Context, in *MCPRequest) (MCPAnswer, error) {
	xs := exchange{in: in}
	x := &xs
	if err := s.inSession(ctx, x); err != nil {
		return x.answer, err
	}
	if x.session.Upstream == "" {
		// No session with the server: nothing to listen to (a 2026-07-28
		// server has no such stream; a 2025 one without sessions may).
		if era, err := s.eraOf(ctx, x); err != nil || era.modern {
			x.answer.Status = 405
			return x.answer, nil
		}
	}
	cred, err := s.credential(ctx, x)
	var nc *NotConnectedError
	if errors.As(err, &nc) {
		x.answer.Status, x.answer.Fail = 403, nc.Error()
		return x.answer, nil
	}
	if err != nil {
		x.answer.Status, x.answer.Fail = 502, "the gateway has no credential for server "+x.sv.Name
		return x.answer, nil
	}
	req := ports.MCPRequest{Endpoint: x.sv.Endpoint, Credential: cred, SessionID: x.session.Upstream, ProtocolVersion: in.ProtocolVersion}
	sctx, release := s.sessions.stream(in.SessionID)
	sctx, stop := context.WithTimeout(sctx, s.set.StreamTimeout)
	end := func() { stop(); release() }
	stream, err := s.up.Stream(sctx, req)
	if err != nil {
		end()
		x.answer.Status, x.answer.Fail = 502, "server "+x.sv.Name+" did not open its stream"
		return x.answer, nil
	}
	x.answer.Note = fmt.Sprintf("mcp GET stream server %s; chain %s; upstream status %d", x.sv.Name, chainOf(x.cl), stream.Status())
	if stream.Status() != 200 {
		_ = stream.Close()
		end()
		x.answer.Status = stream.Status()
		return x.answer, nil
	}
	x.answer.Status = 200
	x.answer.Relay = &MCPRelay{stream: stream, limit: s.set.MaxMessageBytes, end: end}
	return x.answer, nil
}

// Delete ends the caller's MCP session, at the server and here.
func (s *MCPGateway) Delete(ctx context.Context, in *MCPRequest) (MCPAnswer, error) {
	xs := exchange{in: in}
	x := &xs
	if err := s.inSession(ctx, x); err != nil {
		return x.answer, err
	}
	s.sessions.remove(in.SessionID, x.session)
	cred, err := s.credential(ctx, x)
	req := ports.MCPRequest{Endpoint: x.sv.Endpoint, Credential: cred, SessionID: x.session.Upstream, ProtocolVersion: in.ProtocolVersion}
	status := 204
	if err == nil && x.session.Upstream != "" {
		ctx, cancel := context.WithTimeout(ctx, s.set.CallTimeout)
		defer cancel()
		if st, derr := s.up.Delete(ctx, req); derr == nil && st != 405 {
			status = st
		}
	}
	x.answer.Status = status
	x.answer.Note = fmt.Sprintf("mcp DELETE session server %s; chain %s; upstream status %d", x.sv.Name, chainOf(x.cl), status)
	return x.answer, nil
}
