package ports

import (
	"context"
	"encoding/json"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
)

// MCPUpstream carries the MCP gateway's messages to a registered server's
// endpoint over MCP's Streamable HTTP transport (adapters/mcpproxy). It
// decides nothing and keeps no state of its own: the gateway (app) says
// what to send, with which credential, in which protocol era.
type MCPUpstream interface {
	// Post sends one message. For a request (id non-nil) it reads the
	// answer up to the response to id (a JSON body, or an SSE stream whose
	// notifications come first); for a notification it expects 202. ctx
	// must have a deadline, which bounds the whole exchange. Every failure
	// of the server (unreachable, timed out, too large, malformed, another
	// id) is an error; a non-2xx answer is a reply.
	Post(ctx context.Context, r MCPRequest, id json.RawMessage) (MCPReply, error)
	// Stream opens the server's own event stream (GET, MCP 2025); the
	// caller reads it until ctx ends and closes it.
	Stream(ctx context.Context, r MCPRequest) (MCPStream, error)
	// Delete ends the server's session (DELETE, MCP 2025) and returns the
	// server's status.
	Delete(ctx context.Context, r MCPRequest) (int, error)
}

// UpstreamCredentials gives the gateway's own credential for a server:
// what goes upstream as its Bearer token, never the caller's.
type UpstreamCredentials interface {
	// Credential is server's credential; "" when it has none.
	Credential(ctx context.Context, server domain.Server) (string, error)
}

// MCPRequest is one message for an upstream server.
type MCPRequest struct {
	Endpoint string
	// Credential is the gateway's own token for the server ("" none); the
	// caller's credential is never passed on.
	Credential      string
	SessionID       string
	ProtocolVersion string
	// Method and Name are the Mcp-Method and Mcp-Name headers of a request
	// in MCP 2026-07-28 ("" none; Name as it goes on the wire), Params its
	// Mcp-Param-* headers.
	Method, Name string
	Params       []MCPParam
	Body         []byte
}

// MCPParam is one Mcp-Param-{Name} header: Name without the prefix, the
// value as it goes on the wire.
type MCPParam struct{ Name, Value string }

// MCPReply is what the server answered.
type MCPReply struct {
	Status      int
	SessionID   string
	ContentType string
	// SSE: the answer came as an event stream.
	SSE bool
	// Messages are the server's messages: for a request, the notifications
	// it sent first and its response last.
	Messages []mcpwire.Message
	// Dropped counts messages left out: requests of the server (the
	// gateway relays none) and responses to ids never asked.
	Dropped int
	// Body is a non-2xx answer's body (bounded), or a notification's.
	Body []byte
}

// MCPStream is a server's own event stream as it opened.
type MCPStream interface {
	// Status is the server's HTTP status; only 200 carries events.
	Status() int
	// Next returns the data of the next event; io.EOF at the end.
	Next() ([]byte, error)
	Close() error
}
