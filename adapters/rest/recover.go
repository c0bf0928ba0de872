package rest

import (
	"fmt"

	"github.com/gofiber/fiber/v2"
	"go.uber.org/zap"
)

// recoverPanic turns a panic into a 500 error so the audit stage sees it.
func (s *Server) recoverPanic(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("handler panicked", zap.String("request_id", requestID(c)), zap.Any("panic", r), zap.Stack("stack"))
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return c.Next()
}
