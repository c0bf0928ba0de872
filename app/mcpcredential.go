package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
)

// What a server receives as its Bearer token: for a server registered
// with upstream_auth, the calling person's own token (Connections: their
// connection's, refreshed, or one exchanged on their behalf); for any
// other, the gateway's own credential. Never the caller's credential.

// connectInput is the key of the gateway's input request that asks a
// 2026-07-28 client's person to connect.
const connectInput = "agentauth_connect"

// withConnections makes the gateway send people's own tokens to servers
// with upstream_auth.
func (s *MCPGateway) withConnections(c *Connections) { s.people = c }

// personOf is the person x's calls are made for: an agent token's session
// owner, or the principal acting for an agent.
func personOf(x *exchange) UpstreamPerson {
	return UpstreamPerson{Subject: x.cl.Principal.Subject, ProviderToken: x.in.Caller.ProviderToken}
}

// credential is the token x's server gets, noted in x's audit record
// when it is a person's.
func (s *MCPGateway) credential(ctx context.Context, x *exchange) (string, error) {
	tok, note, err := s.credentialOf(ctx, x.sv, personOf(x))
	if note != "" {
		x.n.Credential = note
	}
	return tok, err
}

// credentialOf is the token sv gets for who.
func (s *MCPGateway) credentialOf(ctx context.Context, sv domain.Server, who UpstreamPerson) (token, note string, err error) {
	if sv.UpstreamAuth == nil {
		tok, err := s.creds.Credential(ctx, sv)
		return tok, "", err
	}
	if s.people == nil {
		return "", "", errors.New("server " + sv.Name + " authorizes each person's calls (upstream_auth), and people's credentials are off")
	}
	return s.people.Credential(ctx, sv, who)
}

// notConnected answers a call refused before anything was forwarded: the
// person has no working credential for the server. A 2026-07-28 client
// that declared URL elicitation gets input_required with the URL to
// connect at (its retry, once connected, goes through); any other the
// refusal with the URL in its data.
func (s *MCPGateway) notConnected(x *exchange, id json.RawMessage, nc *NotConnectedError) MCPAnswer {
	x.refuse("")
	x.n.Reason = domain.ReasonUpstreamNotConnected
	if id == nil {
		return x.fail(403, nc.Error())
	}
	if x.modern && urlElicitation(x.p.Meta.ClientCapabilities) && !declinedInput(x.p.InputResponses, connectInput) {
		res := map[string]any{"resultType": "input_required", "inputRequests": map[string]any{connectInput: map[string]any{
			"method": "elicitation/create", "params": map[string]any{"mode": "url", "url": nc.URL,
				"message": "Server " + nc.Server + " acts on your own account, and " + nc.Why +
					". Open the link to connect your account (once), then go on: the call is made again."}}}}
		b, _ := json.Marshal(res)
		return x.result(id, b)
	}
	return x.rpcErrorData(200, id, mcpwire.CodeDenied, domain.ReasonUpstreamNotConnected, nc.Error(), &mcpwire.ErrorData{ConnectURL: nc.URL})
}

// withoutOwnInput is a 2026-07-28 retry's body without the client's
// answer to the gateway's own connect request (it is no business of the
// server's); any other body as it is.
func withoutOwnInput(x *exchange, body []byte) ([]byte, error) {
	if !x.modern || len(x.p.InputResponses) == 0 || mcpwire.MemberValue(x.p.InputResponses, connectInput) == nil {
		return body, nil
	}
	body, err := mcpwire.DeleteMember(body, "params", "inputResponses", connectInput)
	if err == nil && string(bytes.TrimSpace(mcpwire.MemberValue(body, "params", "inputResponses"))) == "{}" {
		body, err = mcpwire.DeleteMember(body, "params", "inputResponses")
	}
	return body, err
}
