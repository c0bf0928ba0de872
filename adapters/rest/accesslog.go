package rest

import (
	"time"

	"github.com/gofiber/fiber/v2"
	"go.uber.org/zap"
)

// maxUserAgentLog bounds the user agent in the access log.
const maxUserAgentLog = 256

// accessLog writes one line per request: the request target as the audit
// record has it (credentials replaced), the reason code of an error answer,
// the client address (behind trusted proxies) and the user agent
// (truncated). It logs no credential, cookie or other header.
func (s *Server) accessLog(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	if err != nil {
		if herr := s.handleError(c, err); herr != nil {
			return herr
		}
	}
	st := stateOf(c)
	s.metrics.observe(c, st, start)
	// The user agent points into the request's buffer; zap encodes it
	// before this returns, so it is neither copied nor kept.
	ua := c.Get(fiber.HeaderUserAgent)
	if len(ua) > maxUserAgentLog {
		ua = ua[:maxUserAgentLog]
	}
	if ce := s.requestLog.Check(zap.InfoLevel, "request"); ce != nil {
		st.logFields = [...]zap.Field{
			zap.String("request_id", st.id),
			zap.String("method", c.Method()),
			zap.String("path", st.target),
			zap.Int("status", c.Response().StatusCode()),
			zap.Duration("latency", time.Since(start)),
			zap.String("subject", st.principal.Subject),
			zap.String("client", st.clientText()),
			zap.String("user_agent", ua),
			zap.String("reason", st.reason),
		}
		ce.Write(st.logFields[:]...)
	}
	return nil
}
