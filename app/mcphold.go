package app

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
	"github.com/agentauth/agentauth/ports"
)

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
	requestID, client, path string
	principal               domain.Principal
}

// hold answers an ask: the request's own audit record (decision ask) is
// written when the stream starts; Wait writes the end's.
func (s *MCPGateway) hold(ctx context.Context, x *exchange, version string, msg mcpwire.Message, call domain.ToolCall) (MCPAnswer, error) {
	req, err := s.upstreamRequest(ctx, x, strings.Clone(version), append([]byte(nil), x.in.Body...))
	if err != nil {
		return x.rpcError(200, msg.ID, mcpwire.CodeUpstream, domain.ReasonGatewayUpstream, "the gateway has no credential for server "+x.sv.Name), nil
	}
	in := x.in
	x.answer.Status = 200
	x.answer.Held = &MCPHeld{g: s, call: call, id: append(json.RawMessage(nil), msg.ID...), req: req, note: x.n,
		requestID: strings.Clone(in.RequestID), client: strings.Clone(in.Client), path: strings.Clone(in.Path), principal: x.cl.Principal}
	return x.done(), nil
}

// Wait holds the call until it is approved (then forwards it, once, with
// the arguments approved), rejected, or the wait ends (AskTimeout, the
// server stopping). write sends one SSE event's data, or a comment when
// comment is true, and fails once the client is gone. It returns when the
// stream's last event has been written, after recording the end; the
// error is the record's, which could not be committed.
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
				cancel()
			}
		case r = <-resolved:
			waiting = false
		}
	}
	intent := domain.AuditIntent{RequestID: h.requestID, Subject: h.principal.Subject, AuthMethod: h.principal.Method,
		Client: h.client, Method: "POST", Path: h.path}
	actx := ports.WithAuditIntent(context.Background(), &intent)
	var answer []byte
	decision := domain.AuditDeny
	switch {
	case gone:
		n.Reason = "client_gone"
	case r.err != nil:
		n.Reason = domain.ReasonGatewayTimeout
		answer = mcpwire.ErrorResponse(h.id, mcpwire.ErrorObject{Code: mcpwire.CodeNotApproved,
			Message: "tool call " + h.call.ID + " was not approved in time", Data: map[string]string{"reason_code": n.Reason, "call": h.call.ID}})
	case r.call.Status != domain.CallApproved:
		n.Reason = domain.ReasonGatewayRejected
		answer = mcpwire.ErrorResponse(h.id, mcpwire.ErrorObject{Code: mcpwire.CodeNotApproved,
			Message: "tool call " + h.call.ID + " was rejected by " + r.call.ResolvedBy, Data: map[string]string{"reason_code": n.Reason, "call": h.call.ID}})
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

// release spends the approval on the held arguments and forwards the
// call; it returns the answer to send and the audit decision.
func (h *MCPHeld) release(actx context.Context, call domain.ToolCall, n *domain.GatewayCall) ([]byte, domain.AuditDecision) {
	g := h.g
	n.Decision = "approved by " + call.ResolvedBy
	if err := g.decide.UseApproval(actx, call, h.note.Args); err != nil {
		n.Reason = "approval_used"
		return mcpwire.ErrorResponse(h.id, mcpwire.ErrorObject{Code: mcpwire.CodeNotApproved, Message: "the approval of tool call " + call.ID + " cannot be used: " + err.Error(),
			Data: map[string]string{"reason_code": n.Reason, "call": call.ID}}), domain.AuditDeny
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.set.CallTimeout)
	defer cancel()
	start := time.Now()
	rep, err := g.up.Post(ctx, h.req, h.id)
	n.Upstream, n.Duration, n.Dropped = rep.Status, time.Since(start), rep.Dropped
	if err != nil || rep.Status < 200 || rep.Status > 299 || len(rep.Messages) == 0 {
		n.Reason = domain.ReasonGatewayUpstream
		return mcpwire.ErrorResponse(h.id, mcpwire.ErrorObject{Code: mcpwire.CodeUpstream, Message: "the server failed the approved call",
			Data: map[string]string{"reason_code": n.Reason, "call": call.ID}}), domain.AuditAllow
	}
	return mcpwire.Encode(rep.Messages[len(rep.Messages)-1]), domain.AuditAllow
}
