package app

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
)

// A 2026-07-28 client's tools/call that a rule holds is answered at once
// with an input_required result (basic/patterns/mrtr.mdx): a URL-mode
// elicitation whose URL opens the approval in the console, when the
// client declared it can open one, and a requestState, sealed so that any
// instance can check it. The client's retry with that state is forwarded
// once if the call was approved, refused if it was rejected or withdrawn,
// and answered input_required again while it waits. Nothing is held open:
// the client waits, and comes back.

// approvalInput is the key of the gateway's input request.
const approvalInput = "agentauth_approval"

// approvalState is what a requestState the gateway issued says: which
// call, for which arguments, agent and caller, until when; and a server's
// own state of the call, which the retry brought and goes back to it.
type approvalState struct {
	Call  string `json:"c"`
	Args  string `json:"a"`
	Owner string `json:"o"`
	Tool  string `json:"t"`
	Until int64  `json:"u"` // Unix nanoseconds
	// InnerState and InnerInput are the server's requestState and
	// inputResponses of the call, restored when it is forwarded.
	InnerState string          `json:"s,omitempty"`
	InnerInput json.RawMessage `json:"i,omitempty"`
}

// approvalAD binds a requestState to its server, apart from session ids.
func approvalAD(server string) []byte { return []byte("approval\x00" + server) }

// sealApproval seals st with the key every instance shares.
func (s *MCPGateway) sealApproval(server string, st approvalState) string {
	plain, _ := json.Marshal(st)
	aead := s.sessions.aead
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, approvalAD(server)))
}

// openApproval opens a requestState the gateway issued for server; false
// for any other (a server's own, or one tampered with).
func (s *MCPGateway) openApproval(server, state string) (approvalState, bool) {
	var st approvalState
	raw, err := base64.RawURLEncoding.DecodeString(state)
	aead := s.sessions.aead
	if err != nil || len(raw) < aead.NonceSize() {
		return st, false
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], approvalAD(server))
	if err != nil || json.Unmarshal(plain, &st) != nil {
		return st, false
	}
	return st, true
}

// restore is a retry's body as it goes to the server: the gateway's own
// round trip removed, the server's state of the call put back.
func (st *approvalState) restore(body []byte) ([]byte, error) {
	body, err := mcpwire.DeleteMember(body, "params", "requestState")
	if err == nil {
		body, err = mcpwire.DeleteMember(body, "params", "inputResponses")
	}
	if err == nil && st.InnerState != "" {
		body, err = mcpwire.SetMember(body, quote(st.InnerState), "params", "requestState")
	}
	if err == nil && len(st.InnerInput) > 0 {
		body, err = mcpwire.SetMember(body, st.InnerInput, "params", "inputResponses")
	}
	return body, err
}

func quote(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// digest is the hex SHA-256 of parts, joined by NULs.
func digest(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:])
}

// holdOf is who waits for x's call if it asks, and until when: a 2025
// client on its held stream (its MCP session and request id, which its
// notifications/cancelled names), a 2026 client by coming back.
func (s *MCPGateway) holdOf(x *exchange, msg mcpwire.Message) Hold {
	until := s.decide.clock.Now().Add(s.set.AskTimeout)
	if x.modern {
		return Hold{Waiter: digest("2026-07-28", x.sv.Name, ownerOf(x.cl), string(msg.ID)), Until: until}
	}
	return Hold{Waiter: waiterOf(x.sv.Name, x.in.SessionID, msg.ID), Until: until}
}

// waiterOf names a 2025 client waiting on its held stream: the request id
// within its MCP session.
func waiterOf(server, session string, id json.RawMessage) string {
	return digest("2025", server, session, strings.TrimSpace(string(id)))
}

// askForApproval answers a 2026 client's call that asks: input_required,
// with the approval's URL to open when the client can open one.
func (s *MCPGateway) askForApproval(x *exchange, msg mcpwire.Message, call domain.ToolCall) (MCPAnswer, error) {
	st := approvalState{Call: call.ID, Args: call.ArgsHash, Owner: digest(ownerOf(x.cl)), Tool: call.Tool, Until: call.WaitUntil.UnixNano()}
	if x.p.RequestState != "" {
		// The server's own state of the call: it goes back with the call.
		st.InnerState, st.InnerInput = x.p.RequestState, x.p.InputResponses
	}
	return s.inputRequired(x, msg, call, s.sealApproval(x.sv.Name, st)), nil
}

// inputRequired is the input_required result of a call waiting for its
// approval: the state to come back with and, to a client that declared
// URL elicitation, the console's page to open (mrtr.mdx: never an input
// request the client did not declare).
func (s *MCPGateway) inputRequired(x *exchange, msg mcpwire.Message, call domain.ToolCall, state string) MCPAnswer {
	res := map[string]any{"resultType": "input_required", "requestState": state}
	if urlElicitation(x.p.Meta.ClientCapabilities) {
		res["inputRequests"] = map[string]any{approvalInput: map[string]any{"method": "elicitation/create", "params": map[string]any{
			"mode": "url", "url": strings.TrimSuffix(s.set.ResourceBase, "/") + "/console/approvals#call-" + call.ID,
			"message": "Tool call " + call.Tool + " (" + call.ID + ") waits for a person's approval: " + call.Decision.Message +
				". Open the link to see its arguments and approve or reject it (or ask the session's owner or a lead to), then go on.",
		}}}
	}
	b, _ := json.Marshal(res)
	return x.result(msg.ID, b)
}

// urlElicitation: the client's capabilities declare URL-mode elicitation.
func urlElicitation(caps json.RawMessage) bool {
	var c struct {
		Elicitation *struct {
			URL json.RawMessage `json:"url"`
		} `json:"elicitation"`
	}
	return json.Unmarshal(caps, &c) == nil && c.Elicitation != nil && c.Elicitation.URL != nil
}

// declinedInput: the client's answer to the gateway's input request key
// declined or cancelled opening its URL.
func declinedInput(responses json.RawMessage, key string) bool {
	var r map[string]struct {
		Action string `json:"action"`
	}
	if json.Unmarshal(responses, &r) != nil {
		return false
	}
	a := r[key].Action
	return a == "decline" || a == "cancel"
}

// approvalRetry decides a 2026 client's retry that brings back the
// gateway's requestState (ok false for any other state: the server's own,
// decided as any call and relayed).
func (s *MCPGateway) approvalRetry(ctx context.Context, x *exchange, msg mcpwire.Message, canonical []byte) (MCPAnswer, bool, error) {
	st, ok := s.openApproval(x.sv.Name, x.p.RequestState)
	if !ok {
		return MCPAnswer{}, false, nil
	}
	x.ours, x.n.Call = &st, st.Call
	tool, _ := domain.CanonicalToolName(x.p.Name)
	if st.Owner != digest(ownerOf(x.cl)) || st.Tool != tool || st.Args != x.n.Args {
		x.refuse("")
		x.n.Decision, x.n.Reason = "deny", domain.ReasonGatewayState
		return x.rpcError(200, msg.ID, mcpwire.CodeInvalidParams, x.n.Reason, "the requestState is of another call, agent or arguments"), true, nil
	}
	if s.decide.clock.Now().UnixNano() > st.Until {
		_, _ = s.decide.Withdraw(ctx, x.cl, st.Call, holdEnded)
		return x.approvalError(msg.ID, mcpwire.CodeApprovalTimeout, domain.ReasonGatewayTimeout, "tool call "+st.Call+" was not approved in time"), true, nil
	}
	call, err := s.decide.Redecide(ctx, x.cl, x.sv.Name, x.p.Name, canonical)
	if err != nil {
		return x.done(), true, err
	}
	if call.Decision.Effect != domain.EffectAsk {
		// The rules changed since it asked: decided anew.
		_, _ = s.decide.Withdraw(ctx, x.cl, st.Call, "agentauth: decided anew, "+string(call.Decision.Effect))
		x.n.Decision, x.n.Reason = string(call.Decision.Effect), call.Decision.Reason
		if call.Decision.Effect == domain.EffectAllow {
			a, err := s.forwardCall(ctx, x, msg)
			return a, true, err
		}
		x.refuse("")
		return x.rpcError(200, msg.ID, mcpwire.CodeDenied, call.Decision.Reason, call.Decision.Message), true, nil
	}
	cur, err := s.decide.Call(ctx, st.Call)
	if err != nil {
		return x.done(), true, err
	}
	x.n.Decision, x.n.Reason = "ask", call.Decision.Reason
	switch cur.Status {
	case domain.CallPending:
		if declinedInput(x.p.InputResponses, approvalInput) {
			_, err := s.decide.Withdraw(ctx, x.cl, cur.ID, "the client declined to open the approval")
			switch {
			case err == nil:
				return x.approvalError(msg.ID, mcpwire.CodeApprovalWithdrawn, domain.ReasonGatewayWithdrawn, "tool call "+cur.ID+" is withdrawn: the approval was declined"), true, nil
			case !errors.Is(err, domain.ErrConflict):
				return x.done(), true, err
			}
			if cur, err = s.decide.Call(ctx, st.Call); err != nil { // resolved meanwhile
				return x.done(), true, err
			}
			return s.resolvedRetry(ctx, x, msg, cur)
		}
		return s.inputRequired(x, msg, cur, x.p.RequestState), true, nil
	}
	return s.resolvedRetry(ctx, x, msg, cur)
}

// resolvedRetry answers a retry of a call resolved: forwarded once when
// approved, refused when rejected or withdrawn.
func (s *MCPGateway) resolvedRetry(ctx context.Context, x *exchange, msg mcpwire.Message, cur domain.ToolCall) (MCPAnswer, bool, error) {
	switch cur.Status {
	case domain.CallApproved:
		x.n.Decision = "approved by " + cur.ResolvedBy
		if err := s.decide.UseApproval(ctx, cur, x.n.Args); err != nil {
			return x.approvalError(msg.ID, mcpwire.CodeApprovalUsed, domain.ReasonGatewayUsed, "the approval of tool call "+cur.ID+" cannot be used: "+err.Error()), true, nil
		}
		a, err := s.forwardCall(ctx, x, msg)
		return a, true, err
	case domain.CallRejected:
		return x.approvalError(msg.ID, mcpwire.CodeApprovalRejected, domain.ReasonGatewayRejected, "tool call "+cur.ID+" was rejected by "+cur.ResolvedBy), true, nil
	}
	return x.approvalError(msg.ID, mcpwire.CodeApprovalWithdrawn, domain.ReasonGatewayWithdrawn, "tool call "+cur.ID+" is withdrawn: "+cur.ResolvedBy), true, nil
}

// approvalError answers a call that needed approval and does not run.
func (x *exchange) approvalError(id json.RawMessage, code int, reason, msg string) MCPAnswer {
	x.refuse("")
	x.n.Reason = reason
	return x.rpcErrorData(200, id, code, reason, msg, &mcpwire.ErrorData{Call: x.n.Call})
}
