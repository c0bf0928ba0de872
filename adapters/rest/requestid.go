package rest

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/gofiber/fiber/v2"
	"go.uber.org/zap"
)

// HeaderRequestID carries the request id on every response.
const HeaderRequestID = "X-Request-ID"

// Security headers of every answer, built once.
var (
	headerCacheControl       = []byte(fiber.HeaderCacheControl)
	noStore                  = []byte("no-store")
	headerContentTypeOptions = []byte(fiber.HeaderXContentTypeOptions)
	noSniff                  = []byte("nosniff")
)

// securityHeaders marks an answer: it may hold one caller's data or an
// error about it, so no shared cache may keep it and no browser may
// reinterpret it (ASVS V3/V14).
func securityHeaders(c *fiber.Ctx) {
	c.Response().Header.SetCanonical(headerCacheControl, noStore)
	c.Response().Header.SetCanonical(headerContentTypeOptions, noSniff)
}

// Incoming request ids: a caller's X-Request-ID is kept (and echoed) when it
// has 1 to maxRequestIDLen characters of A-Z, a-z, 0-9, '.', '_' and '-', so
// logs and audit records correlate with the caller's and a proxy's; any
// other value is replaced, so that no header can inject into a log line.
const maxRequestIDLen = 64

var headerRequestID = []byte(HeaderRequestID)

// incomingRequestID returns the caller's well-formed X-Request-ID, copied
// (the header's bytes are reused for the next request), or "".
func incomingRequestID(c *fiber.Ctx) string {
	v := c.Request().Header.PeekBytes(headerRequestID)
	if len(v) == 0 || len(v) > maxRequestIDLen {
		return ""
	}
	for _, b := range v {
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '.' || b == '_' || b == '-') {
			return ""
		}
	}
	return string(v)
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// withRequestID gives the request its id and state, and marks debug-mode
// responses.
func (s *Server) withRequestID(c *fiber.Ctx) error {
	st := statePool.Get().(*reqState)
	id := incomingRequestID(c)
	if id == "" {
		id = newRequestID()
	}
	*st = reqState{id: id, client: s.clientAddress(c), target: s.redactor.Redact(c.Request().Header.RequestURI())}
	c.Locals(stateKey{}, st)
	c.Set(HeaderRequestID, st.id)
	securityHeaders(c)
	if s.cfg.Debug {
		c.Set("X-Auth-Debug", "true")
	}
	err := checkFraming(&c.Request().Header)
	if err != nil {
		// Where the next request on this connection starts is unknown.
		c.Context().SetConnectionClose()
	} else {
		err = c.Next()
	}
	if err != nil {
		// Answer here, while the state is still ours to read.
		if herr := s.handleError(c, err); herr != nil {
			s.log.Error("write error response", zap.Error(herr))
		}
	}
	c.Locals(stateKey{}, nil)
	statePool.Put(st)
	return nil
}
