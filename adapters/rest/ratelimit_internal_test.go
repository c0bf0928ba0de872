package rest

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
)

func TestWindowLimiter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 50, 0, time.UTC)
	l := newWindowLimiter(RateLimit{PerMinute: 2, Now: func() time.Time { return now }})
	steps := []struct {
		name, caller string
		advance      time.Duration
		allowed      bool
	}{
		{"first", "a", 0, true},
		{"second", "a", 0, true},
		{"third: over", "a", 0, false},
		{"another caller", "b", 0, true},
		{"the next minute", "a", 10 * time.Second, true},
	}
	for _, st := range steps {
		now = now.Add(st.advance)
		err := l.allow(st.caller)
		if (err == nil) != st.allowed {
			t.Fatalf("%s: %v, want allowed %v", st.name, err, st.allowed)
		}
		var rl *rateLimited
		if err != nil && (!errors.As(err, &rl) || rl.retryAfter != 10 || !errors.Is(err, domain.ErrTooManyRequests)) {
			t.Errorf("%s: %v, want a 429 retrying after the 10 s left in the minute", st.name, err)
		}
	}
	// Past maxTrackedCallers, a caller not seen this minute is refused.
	for i := len(l.counts); i < maxTrackedCallers; i++ {
		l.counts[fmt.Sprint(i)] = 1
	}
	if err := l.allow("newcomer"); err == nil {
		t.Error("a new caller past the table's bound was allowed")
	}
	if err := l.allow("a"); err != nil {
		t.Errorf("a caller already counted: %v", err)
	}
}

func TestAddressCaller(t *testing.T) {
	tests := []struct{ addr, want string }{
		{"192.0.2.7", "addr:192.0.2.7"},
		{"::ffff:192.0.2.7", "addr:192.0.2.7"},
		{"2001:db8:1:2:aaaa::1", "net:2001:db8:1:2::/64"},
		{"2001:db8:1:2:bbbb::9", "net:2001:db8:1:2::/64"},
	}
	for _, tt := range tests {
		if got := addressCaller(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("addressCaller(%s) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}
