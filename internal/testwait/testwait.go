// Package testwait lets a test wait for a condition instead of for time:
// it asks until the condition holds, and fails the test when a deadline
// passes first. The deadline bounds a broken run; it is never what the
// test measures, so a slow machine only makes the test slower.
package testwait

import (
	"testing"
	"time"
)

// every is how often a condition is asked again.
const every = 10 * time.Millisecond

// Until asks cond until it holds, and fails the test when within passes
// first. cond returns whether it holds and, when not, what it saw, which
// the failure message gives with what.
func Until(t testing.TB, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	if saw, ok := until(within, cond); !ok {
		t.Fatalf("%s: not within %s; last seen: %s", what, within, saw)
	}
}

// until asks cond every 10 ms until it holds or within passes; it returns
// what cond saw last and whether it held.
func until(within time.Duration, cond func() (bool, string)) (string, bool) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		ok, saw := cond()
		if ok {
			return "", true
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return saw, false
		}
	}
}
