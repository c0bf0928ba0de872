package testwait

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

func TestUntil(t *testing.T) {
	tests := []struct {
		name    string
		holdsAt int // the call at which cond first holds; 0: never
		within  time.Duration
		wantOK  bool
		wantSaw string
	}{
		{"holds at once", 1, time.Second, true, ""},
		{"holds on the fifth asking", 5, time.Second, true, ""},
		{"never holds: the deadline ends it with what was seen", 0, 995 * time.Millisecond, false, "asked 100 times"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				calls := 0
				saw, ok := until(tt.within, func() (bool, string) {
					calls++
					return calls == tt.holdsAt, fmt.Sprintf("asked %d times", calls)
				})
				if ok != tt.wantOK || saw != tt.wantSaw {
					t.Errorf("got %q %v, want %q %v", saw, ok, tt.wantSaw, tt.wantOK)
				}
				if tt.wantOK && calls != tt.holdsAt {
					t.Errorf("asked %d times, want %d (no more once it holds)", calls, tt.holdsAt)
				}
			})
		})
	}
}
