package postgres_test

import (
	"testing"
	"time"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/ports/porttest"
)

func TestLoginStore(t *testing.T) {
	porttest.RunLoginStore(t, func(t *testing.T) porttest.LoginStore { return newStore(t) })
}

func TestSharedLoginStore(t *testing.T) {
	porttest.RunSharedLoginStore(t, func(t *testing.T, n int) []porttest.LoginStore {
		url := pgtest.URL(t)
		out := make([]porttest.LoginStore, n)
		for i := range out {
			out[i] = open(t, url)
		}
		return out
	})
}

// TestLoginFailuresOfOtherKeysForgotten: failures are recorded under a key
// the caller chooses (any username), so a key never seen again must not keep
// its rows forever: recording any failure forgets every key's failures that
// are older than the window.
func TestLoginFailuresOfOtherKeysForgotten(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	window := 15 * time.Minute
	for _, k := range []string{"user:guess-1", "user:guess-2", "addr:203.0.113.9"} {
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
		if n, _, err := st.LoginFailures(ctx, tt.key, time.Unix(0, 1)); err != nil || n != tt.want {
			t.Errorf("LoginFailures(%s) since ever: got %d, %v; want %d", tt.key, n, err, tt.want)
		}
	}
}
