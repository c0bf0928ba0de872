package auditlog

import (
	"context"
	"fmt"
)

// pinger is what a store offers to say it answers again (both stores do).
type pinger interface {
	Ping(ctx context.Context) error
}

// Ready is the readiness check "audit_log": it fails while the last commit
// failed. Requests stop while it fails, so no commit would clear it; it is
// cleared when the store answers its ping again.
func (c *Committer) Ready(ctx context.Context) error {
	last := c.lastErr.Load()
	if last == nil {
		return nil
	}
	if p, ok := c.store.(pinger); ok && p.Ping(ctx) == nil {
		c.lastErr.CompareAndSwap(last, nil)
		return nil
	}
	return fmt.Errorf("the last commit failed: %w", *last)
}
