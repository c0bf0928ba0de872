package rest

import (
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// RateLimit bounds the requests one caller makes to an OAuth endpoint
// (auth.agentTokens.rateLimit): PerMinute in each calendar minute of this
// instance (a fixed window: at most twice that across a minute's edge).
type RateLimit struct {
	PerMinute int
	// Now replaces time.Now, for tests.
	Now func() time.Time
}

// maxTrackedCallers bounds a window's table: past it, a caller not yet
// seen this minute is refused (fail closed), so a flood of addresses
// costs bounded memory.
const maxTrackedCallers = 100_000

// windowLimiter counts each caller's requests in the current minute.
type windowLimiter struct {
	limit int
	now   func() time.Time

	mu     sync.Mutex
	window int64 // Unix minute
	counts map[string]int
}

func newWindowLimiter(r RateLimit) *windowLimiter {
	if r.Now == nil {
		r.Now = time.Now
	}
	return &windowLimiter{limit: r.PerMinute, now: r.Now, counts: map[string]int{}}
}

// rateLimited is a refusal for the rest of the minute; retryAfter is in
// seconds.
type rateLimited struct{ retryAfter int }

func (e *rateLimited) Error() string {
	return fmt.Sprintf("too many requests from this caller; retry in %d s", e.retryAfter)
}
func (e *rateLimited) Is(target error) bool { return target == domain.ErrTooManyRequests }

// allow counts a request of caller; an error when over the limit.
func (l *windowLimiter) allow(caller string) error {
	if l.limit <= 0 {
		return nil
	}
	now := l.now()
	minute := now.Unix() / 60
	l.mu.Lock()
	defer l.mu.Unlock()
	if minute != l.window {
		l.window = minute
		clear(l.counts)
	}
	n, seen := l.counts[caller]
	if n >= l.limit || !seen && len(l.counts) >= maxTrackedCallers {
		return &rateLimited{retryAfter: int(60 - now.Unix()%60)}
	}
	l.counts[caller] = n + 1
	return nil
}

// addressCaller names an unauthenticated caller by its address; an IPv6
// caller by its /64, as one host commonly holds a whole /64.
func addressCaller(a netip.Addr) string {
	if a.Is6() && !a.Is4In6() {
		if p, err := a.Prefix(64); err == nil {
			return "net:" + p.String()
		}
	}
	return "addr:" + a.Unmap().String()
}
