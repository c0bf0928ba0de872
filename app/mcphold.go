package app

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
	"github.com/agentauth/agentauth/ports"
)

// A 2025 client's tools/call that a rule holds is answered as an SSE
// stream kept open until the call is approved (then forwarded, once, with
// the arguments approved), rejected, or nobody waits for it any more: the
// client cancelled it (notifications/cancelled), went away (a write to
// its stream failed), or the hold ended (gateway.askTimeout, the server
// stopping). Then the pending approval is withdrawn; approving it answers
// 409, and nothing is ever forwarded without a waiter to receive it.

// holdEnded is who withdrew a call whose hold ended (its ResolvedBy).
const holdEnded = "agentauth: the hold ended"

// MCPHeld is a tools/call held for approval: the edge answers an SSE
// stream at once and calls Wait on it. Nothing in it points into the
// request's buffers: it outlives the request.
type MCPHeld struct {
	g    *MCPGateway
	call domain.ToolCall
	id   json.RawMessage // the JSON-RPC id
	req  ports.MCPRequest
	note domain.GatewayCall
	// who and where the request came from, for the record of the end.
	caller                  Caller
	requestID, client, path string
	principal               domain.Principal
	// sv and who, for a server with upstream_auth: the person's token is
	// taken again when the call is released (the one of the hold's start
	// may have expired meanwhile).
	sv  domain.Server
	who *UpstreamPerson
}

// hold answers a 2025 client's call that asks: the request's own audit
// record (decision ask) is written when the stream starts; Wait writes
// the end's.
func (s *MCPGateway) hold(ctx context.Context, x *exchange, msg mcpwire.Message, call domain.ToolCall) (MCPAnswer, error) {
	req, err := s.outbound(ctx, x, msg, append([]byte(nil), x.in.Body...), false)
	if err != nil {
		_, _ = s.decide.Withdraw(ctx, x.cl, call.ID, "agentauth: the server cannot be reached")
		return s.upstreamFailed(x, msg.ID, err), nil
	}
	req.ProtocolVersion, req.Name = strings.Clone(req.ProtocolVersion), strings.Clone(req.Name)
	in := x.in
	x.answer.Status = 200
	held := &MCPHeld{g: s, call: call, id: append(json.RawMessage(nil), msg.ID...), req: req, note: x.n, caller: x.cl,
		requestID: strings.Clone(in.RequestID), client: strings.Clone(in.Client), path: strings.Clone(in.Path), principal: x.cl.Principal}
	if x.sv.UpstreamAuth != nil {
		who := personOf(x)
		who.Subject, who.ProviderToken = strings.Clone(who.Subject), strings.Clone(who.ProviderToken)
		held.sv, held.who = x.sv, &who
	}
	x.answer.Held = held
	return x.done(), nil
}

// Wait holds the call until it is approved, rejected or withdrawn, or the
// hold ends. write sends one SSE event's data, or a comment when comment
// is true, and fails once the client is gone. It returns when the stream's
// last event has been written, after recording the end; the error is the
// record's, which could not be committed.
func (h *MCPHeld) Wait(write func(data []byte, comment bool) error) error {
	g := h.g
	ctx, cancel := context.WithTimeout(g.sessions.ctx, g.set.AskTimeout)
	defer cancel()
	type result struct {
		call domain.ToolCall
		err  error
	}
	resolved := make(chan result, 1)
	go func() {
		call, err := g.decide.AwaitResolution(ctx, h.call.ID, g.set.Poll)
		resolved <- result{call, err}
	}()
	keep := time.NewTicker(g.set.KeepAlive)
	defer keep.Stop()
	n := h.note
	gone := write([]byte("tool call "+h.call.ID+" waits for approval"), true) != nil
	var r result
	for waiting := !gone; waiting; {
		select {
		case <-keep.C:
			if write([]byte("keep-alive"), true) != nil {
				gone, waiting = true, false
			}
		case r = <-resolved:
			waiting = false
		}
	}
	cancel()
	intent := domain.AuditIntent{RequestID: h.requestID, Subject: h.principal.Subject, AuthMethod: h.principal.Method,
		Client: h.client, Method: "POST", Path: h.path}
	actx := ports.WithAuditIntent(context.Background(), &intent)
	if gone || r.err != nil {
		// Nobody waits for it any more: withdrawn, unless an approver was
		// first, in which case the call runs if its client is still there.
		why := "the client went away"
		if !gone {
			why = holdEnded
		}
		switch _, err := g.decide.Withdraw(actx, h.caller, h.call.ID, why); {
		case errors.Is(err, domain.ErrConflict):
			r.call, r.err = g.decide.Call(actx, h.call.ID)
		case err != nil:
			r.err = err
		default:
			r.call.Status, r.call.ResolvedBy, r.err = domain.CallWithdrawn, why, nil
		}
	}
	var answer []byte
	decision := domain.AuditDeny
	switch {
	case gone && r.call.Status == domain.CallWithdrawn:
		n.Reason = "client_gone"
	case r.err != nil:
		n.Reason = domain.ReasonGatewayUpstream
		answer = h.error(mcpwire.CodeUpstream, n.Reason, "the state of tool call "+h.call.ID+" cannot be read")
	case r.call.Status == domain.CallWithdrawn && r.call.ResolvedBy == holdEnded:
		n.Reason = domain.ReasonGatewayTimeout
		answer = h.error(mcpwire.CodeApprovalTimeout, n.Reason, "tool call "+h.call.ID+" was not approved within "+g.set.AskTimeout.String()+": withdrawn")
	case r.call.Status == domain.CallWithdrawn:
		// Its client cancelled it: a cancelled request gets no answer.
		n.Reason = domain.ReasonGatewayWithdrawn
	case r.call.Status == domain.CallRejected:
		n.Reason = domain.ReasonGatewayRejected
		answer = h.error(mcpwire.CodeApprovalRejected, n.Reason, "tool call "+h.call.ID+" was rejected by "+r.call.ResolvedBy)
	case gone || write([]byte("approved"), true) != nil:
		// Approved, and nobody to receive the result: not forwarded.
		n.Decision, n.Reason = "approved by "+r.call.ResolvedBy, "client_gone"
	default:
		answer, decision = h.release(actx, r.call, &n)
	}
	if answer != nil {
		_ = write(answer, false)
	}
	rec := domain.AuditRecord{Time: time.Now(), RequestID: h.requestID, Subject: h.principal.Subject, AuthMethod: h.principal.Method,
		Method: "POST", Path: h.path, Client: h.client, IntentKey: intent.Key, Decision: decision, Status: 200,
		Reason: "held tool call released: " + n.String()}
	return g.audit.Record(context.Background(), rec)
}

// error is the answer to the held request that it does not run.
func (h *MCPHeld) error(code int, reason, msg string) []byte {
	return mcpwire.ErrorResponse(h.id, mcpwire.ErrorObject{Code: code, Message: msg,
		Data: &mcpwire.ErrorData{Reason: reason, Call: h.call.ID, RequestID: h.requestID}})
}

// release spends the approval on the held arguments and forwards the
// call; it returns the answer to send and the audit decision.
func (h *MCPHeld) release(actx context.Context, call domain.ToolCall, n *domain.GatewayCall) ([]byte, domain.AuditDecision) {
	g := h.g
	n.Decision = "approved by " + call.ResolvedBy
	if err := g.decide.UseApproval(actx, call, h.note.Args); err != nil {
		n.Reason = domain.ReasonGatewayUsed
		var changed *domain.Refusal
		if errors.As(err, &changed) {
			n.Reason = changed.Code
		}
		return h.error(mcpwire.CodeApprovalUsed, n.Reason, "the approval of tool call "+call.ID+" cannot be used: "+err.Error()), domain.AuditDeny
	}
	ctx, cancel := context.WithTimeout(actx, g.set.CallTimeout)
	defer cancel()
	if h.who != nil {
		cred, note, err := g.credentialOf(ctx, h.sv, *h.who)
		if note != "" {
			n.Credential = note
		}
		var nc *NotConnectedError
		if errors.As(err, &nc) {
			n.Reason = domain.ReasonUpstreamNotConnected
			return mcpwire.ErrorResponse(h.id, mcpwire.ErrorObject{Code: mcpwire.CodeDenied, Message: nc.Error(),
				Data: &mcpwire.ErrorData{Reason: n.Reason, Call: h.call.ID, RequestID: h.requestID, ConnectURL: nc.URL}}), domain.AuditDeny
		}
		if err != nil {
			n.Reason = domain.ReasonGatewayUpstream
			return h.error(mcpwire.CodeUpstream, n.Reason, "the gateway has no credential for server "+h.sv.Name), domain.AuditAllow
		}
		h.req.Credential = cred
	}
	start := time.Now()
	rep, err := g.up.Post(ctx, h.req, h.id)
	n.Upstream, n.Duration, n.Dropped = rep.Status, time.Since(start), rep.Dropped
	if err != nil || rep.Status < 200 || rep.Status > 299 || len(rep.Messages) == 0 {
		n.Reason = domain.ReasonGatewayUpstream
		return h.error(mcpwire.CodeUpstream, n.Reason, "the server failed the approved call"), domain.AuditAllow
	}
	last := rep.Messages[len(rep.Messages)-1]
	if h.req.ProtocolVersion == mcpwire.Modern && inputRequired(last.Result) {
		n.Reason = domain.ReasonGatewayUpstream
		return h.error(mcpwire.CodeUpstream, n.Reason, errInputRequired.Error()), domain.AuditAllow
	}
	return mcpwire.Encode(last), domain.AuditAllow
}

// cancelled withdraws the call a 2025 client cancels
// (notifications/cancelled naming the request it holds), on whichever
// instance holds it: its stream then ends with no answer.
func (s *MCPGateway) cancelled(ctx context.Context, x *exchange, msg mcpwire.Message) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(msg.Params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	call, err := s.decide.WithdrawWaiting(ctx, x.cl, waiterOf(x.sv.Name, x.in.SessionID, p.RequestID), "the client cancelled it")
	if err == nil {
		x.n.Call, x.n.Reason = call.ID, domain.ReasonGatewayWithdrawn
	}
}
