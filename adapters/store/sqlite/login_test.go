package sqlite_test

import (
	"testing"
	"time"

	"github.com/agentauth/agentauth/ports"
)

// testFailuresOfOtherKeysForgotten: failures are recorded under a key the
// caller chooses (any username), so a key never seen again must not keep
// its rows forever: recording any failure forgets every key's failures that
// are older than the window.
func testFailuresOfOtherKeysForgotten(t *testing.T, st ports.LoginThrottle) {
	ctx := t.Context()
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	window := 15 * time.Minute
	old := []string{"user:guess-1", "user:guess-2", "addr:203.0.113.9"}
	for _, k := range old {
		if err := st.RecordLoginFailure(ctx, k, base, base.Add(-window)); err != nil {
			t.Fatalf("RecordLoginFailure(%s): %v", k, err)
		}
	}
	later := base.Add(time.Hour)
	if err := st.RecordLoginFailure(ctx, "user:someone-else", later, later.Add(-window)); err != nil {
		t.Fatalf("RecordLoginFailure: %v", err)
	}
	tests := []struct {
		key  string
		want int
	}{
		{"user:guess-1", 0}, {"user:guess-2", 0}, {"addr:203.0.113.9", 0}, {"user:someone-else", 1},
	}
	for _, tt := range tests {
		// Counted since the epoch: rows kept past their window show up here.
		if n, _, err := st.LoginFailures(ctx, tt.key, time.Unix(0, 1)); err != nil || n != tt.want {
			t.Errorf("LoginFailures(%s) since ever: got %d, %v; want %d", tt.key, n, err, tt.want)
		}
	}
}

func TestLoginFailuresOfOtherKeysForgotten(t *testing.T) {
	testFailuresOfOtherKeysForgotten(t, newStore(t))
}
