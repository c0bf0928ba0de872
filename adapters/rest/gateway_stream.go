package rest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/mcpproxy"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// streamWriteTimeout bounds each write of a held or relayed stream (the
// API's WriteTimeout would otherwise end any stream after 30 s).
const streamWriteTimeout = 30 * time.Second

// heldCall is what a held tools/call needs once its handler has returned
// (the request's pooled state is then reused).
type heldCall struct {
	call      domain.ToolCall
	id        []byte // the JSON-RPC id
	body      []byte
	req       mcpproxy.Request
	note      gatewayCall
	requestID string
	principal domain.Principal
	client    string
	path      string
}

// holdForApproval answers an ask with an SSE stream: keep-alive comments
// until the call is approved (then forwarded, once, with the arguments
// approved), rejected, or AskTimeout passes. The request's audit record
// (decision ask) is written when the stream starts; the outcome gets a
// record of its own.
func (s *Server) holdForApproval(c *fiber.Ctx, sv domain.Server, ms *mcpSession, version string, msg mcpproxy.Message, call domain.ToolCall, n gatewayCall) error {
	// The request outlives the handler: nothing in it may point into the
	// request's buffers.
	req, err := s.upstreamRequest(sv, ms, strings.Clone(version), append([]byte(nil), c.Body()...))
	if err != nil {
		return mcpError(c, fiber.StatusOK, msg.ID, mcpproxy.CodeUpstream, ReasonGatewayUpstream, "the gateway has no credential for server "+sv.Name)
	}
	st := stateOf(c)
	h := heldCall{call: call, id: append([]byte(nil), msg.ID...), req: req, note: n, requestID: st.id,
		principal: st.principal, client: st.intent.Client, path: st.intent.Path}
	conn := c.Context().Conn()
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) { s.releaseHeld(w, conn, h) })
	return nil
}

func (s *Server) releaseHeld(w *bufio.Writer, conn net.Conn, h heldCall) {
	gw := s.cfg.Gateway
	ctx, cancel := context.WithTimeout(s.gwSessions.ctx, gw.AskTimeout)
	defer cancel()
	type result struct {
		call domain.ToolCall
		err  error
	}
	resolved := make(chan result, 1)
	go func() {
		call, err := s.uc.Gateway.AwaitResolution(ctx, h.call.ID, gw.Poll)
		resolved <- result{call, err}
	}()
	write := func(format string, args ...any) bool {
		_ = conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		fmt.Fprintf(w, format, args...)
		return w.Flush() == nil
	}
	keep := time.NewTicker(gw.KeepAlive)
	defer keep.Stop()
	n := h.note
	gone := !write(": tool call %s waits for approval\n\n", h.call.ID)
	var r result
	for waiting := !gone; waiting; {
		select {
		case <-keep.C:
			if !write(": keep-alive\n\n") {
				gone, waiting = true, false
				cancel()
			}
		case r = <-resolved:
			waiting = false
		}
	}
	intent := domain.AuditIntent{RequestID: h.requestID, Subject: h.principal.Subject, AuthMethod: h.principal.Method,
		Client: h.client, Method: fiber.MethodPost, Path: h.path}
	actx := ports.WithAuditIntent(context.Background(), &intent)
	var answer []byte
	decision := domain.AuditDeny
	switch {
	case gone:
		n.Reason = "client_gone"
	case r.err != nil:
		n.Reason = ReasonGatewayTimeout
		answer = mcpproxy.ErrorResponse(h.id, mcpproxy.ErrorObject{Code: mcpproxy.CodeNotApproved,
			Message: "tool call " + h.call.ID + " was not approved in time", Data: map[string]string{"reason_code": n.Reason, "call": h.call.ID}})
	case r.call.Status != domain.CallApproved:
		n.Reason = ReasonGatewayRejected
		answer = mcpproxy.ErrorResponse(h.id, mcpproxy.ErrorObject{Code: mcpproxy.CodeNotApproved,
			Message: "tool call " + h.call.ID + " was rejected by " + r.call.ResolvedBy, Data: map[string]string{"reason_code": n.Reason, "call": h.call.ID}})
	default:
		answer, decision = s.releaseApproved(actx, r.call, h, &n)
	}
	if answer != nil {
		_ = conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		_ = mcpproxy.WriteEvent(w, answer)
		_ = w.Flush()
	}
	rec := domain.AuditRecord{Time: time.Now(), RequestID: h.requestID, Subject: h.principal.Subject, AuthMethod: h.principal.Method,
		Method: fiber.MethodPost, Path: h.path, Client: h.client, IntentKey: intent.Key, Decision: decision, Status: fiber.StatusOK,
		Reason: "held tool call released: " + n.String()}
	if err := s.uc.AuditLog.Record(context.Background(), rec); err != nil {
		s.log.Error("audit record of a released tool call not committed", zap.String("request_id", h.requestID), zap.Error(err))
	}
}

// releaseApproved spends the approval on the held arguments and forwards
// the call; it returns the answer to send and the audit decision.
func (s *Server) releaseApproved(actx context.Context, call domain.ToolCall, h heldCall, n *gatewayCall) ([]byte, domain.AuditDecision) {
	gw := s.cfg.Gateway
	n.Decision = "approved by " + call.ResolvedBy
	if err := s.uc.Gateway.UseApproval(actx, call, h.note.Args); err != nil {
		n.Reason = "approval_used"
		return mcpproxy.ErrorResponse(h.id, mcpproxy.ErrorObject{Code: mcpproxy.CodeNotApproved, Message: "the approval of tool call " + call.ID + " cannot be used: " + err.Error(),
			Data: map[string]string{"reason_code": n.Reason, "call": call.ID}}), domain.AuditDeny
	}
	ctx, cancel := context.WithTimeout(context.Background(), gw.CallTimeout)
	defer cancel()
	start := time.Now()
	rep, err := gw.Upstream.Post(ctx, h.req, h.id)
	n.Upstream, n.Duration, n.Dropped = rep.Status, time.Since(start), rep.Dropped
	if err != nil || rep.Status < 200 || rep.Status > 299 || len(rep.Messages) == 0 {
		n.Reason = ReasonGatewayUpstream
		return mcpproxy.ErrorResponse(h.id, mcpproxy.ErrorObject{Code: mcpproxy.CodeUpstream, Message: "the server failed the approved call",
			Data: map[string]string{"reason_code": n.Reason, "call": call.ID}}), domain.AuditAllow
	}
	return mcpproxy.Encode(rep.Messages[len(rep.Messages)-1]), domain.AuditAllow
}

// mcpGet relays the server's own event stream (notifications only: the
// gateway relays no server request), for at most StreamTimeout.
func (s *Server) mcpGet(c *fiber.Ctx) error {
	sv, cl, err := s.gatewayTarget(c)
	if err != nil {
		return err
	}
	ms, err := s.mcpSession(c, sv, cl)
	if err != nil {
		refused(c)
		return err
	}
	req, err := s.upstreamRequest(sv, ms, c.Get(mcpproxy.HeaderProtocolVersion), nil)
	if err != nil {
		return fiber.NewError(fiber.StatusBadGateway, "the gateway has no credential for server "+sv.Name)
	}
	sctx, release := s.gwSessions.stream(c.Get(mcpproxy.HeaderSessionID))
	ctx, stop := context.WithTimeout(sctx, s.cfg.Gateway.StreamTimeout)
	cancel := func() { stop(); release() }
	resp, err := s.cfg.Gateway.Upstream.Stream(ctx, req)
	if err != nil {
		cancel()
		return fiber.NewError(fiber.StatusBadGateway, "server "+sv.Name+" did not open its stream")
	}
	note(c, fmt.Sprintf("mcp GET stream server %s; chain %s; upstream status %d", sv.Name, chainOf(cl), resp.StatusCode))
	if resp.StatusCode != fiber.StatusOK {
		resp.Body.Close()
		cancel()
		return c.SendStatus(resp.StatusCode)
	}
	conn := c.Context().Conn()
	limit := s.cfg.Gateway.MaxMessageBytes
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer cancel()
		defer resp.Body.Close()
		// A comment first, so the client has the headers before any event.
		_ = conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := w.WriteString(": stream open\n\n"); err != nil || w.Flush() != nil {
			return
		}
		events := mcpproxy.NewEventReader(resp.Body)
		for {
			data, err := events.Next()
			if err != nil {
				return
			}
			m, err := mcpproxy.Parse(data)
			if err != nil || !m.IsNotification() || int64(len(data)) > limit {
				continue
			}
			_ = conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			if mcpproxy.WriteEvent(w, data) != nil || w.Flush() != nil {
				return
			}
		}
	})
	return nil
}

// mcpDelete ends the MCP session, at the server and here.
func (s *Server) mcpDelete(c *fiber.Ctx) error {
	sv, cl, err := s.gatewayTarget(c)
	if err != nil {
		return err
	}
	ms, err := s.mcpSession(c, sv, cl)
	if err != nil {
		refused(c)
		return err
	}
	s.gwSessions.remove(c.Get(mcpproxy.HeaderSessionID), ms)
	req, err := s.upstreamRequest(sv, ms, c.Get(mcpproxy.HeaderProtocolVersion), nil)
	status := fiber.StatusNoContent
	if err == nil && ms.Upstream != "" {
		ctx, cancel := contextWithTimeout(c, s.cfg.Gateway.CallTimeout)
		defer cancel()
		if st, derr := s.cfg.Gateway.Upstream.Delete(ctx, req); derr == nil && st != fiber.StatusMethodNotAllowed {
			status = st
		}
	}
	note(c, fmt.Sprintf("mcp DELETE session server %s; chain %s; upstream status %d", sv.Name, chainOf(cl), status))
	return c.SendStatus(status)
}
