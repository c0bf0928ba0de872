package rest

import (
	"bufio"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/internal/mcpwire"
)

// streamWriteTimeout bounds each write of a held or relayed stream (the
// API's WriteTimeout would otherwise end any stream after 30 s).
const streamWriteTimeout = 30 * time.Second

// holdStream answers a held call with an SSE stream that the flow writes
// to (keep-alive comments, then the call's answer) until the call ends.
func (s *Server) holdStream(c *fiber.Ctx, held *app.MCPHeld) error {
	conn := c.Context().Conn()
	requestID := stateOf(c).id
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		err := held.Wait(func(data []byte, comment bool) error {
			_ = conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			var err error
			if comment {
				_, err = w.WriteString(": " + string(data) + "\n\n")
			} else {
				err = mcpwire.WriteEvent(w, data)
			}
			if err != nil {
				return err
			}
			return w.Flush()
		})
		if err != nil {
			s.log.Error("audit record of a released tool call not committed", zap.String("request_id", requestID), zap.Error(err))
		}
	})
	return nil
}

// relayStream answers a server's own stream, relayed event by event.
func (s *Server) relayStream(c *fiber.Ctx, relay *app.MCPRelay) error {
	conn := c.Context().Conn()
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer relay.Close()
		// A comment first, so the client has the headers before any event.
		_ = conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := w.WriteString(": stream open\n\n"); err != nil || w.Flush() != nil {
			return
		}
		for {
			data, err := relay.Next()
			if err != nil {
				return
			}
			_ = conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			if mcpwire.WriteEvent(w, data) != nil || w.Flush() != nil {
				return
			}
		}
	})
	return nil
}
