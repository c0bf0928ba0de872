package rest

import (
	"context"
	"errors"
	"testing"
)

// TestReadinessReusesProbeResults: callers within probeReuse share one run
// of the probes, so GET /health cannot be turned into database load; the
// identity provider's in-memory checks are read every time.
func TestReadinessReusesProbeResults(t *testing.T) {
	calls := 0
	r := &readiness{checks: ReadyChecks{{Name: "database", Probe: func(context.Context) error {
		calls++
		return errors.New("connection refused")
	}}}}
	for range 50 {
		ready, checks := r.report(context.Background())
		if ready || checks["database"] != "failing: connection refused" {
			t.Fatalf("got ready=%v %v", ready, checks)
		}
	}
	if calls != 1 {
		t.Errorf("probe ran %d times for 50 reports within %s, want 1", calls, probeReuse)
	}
	r.stopping.Store(true)
	if _, checks := r.report(context.Background()); checks["shutdown"] == "" {
		t.Errorf("shutting down: %v, want a failing shutdown check", checks)
	}
}

func TestSummaryDropsDetails(t *testing.T) {
	got := summary(map[string]string{"database": "failing: dial tcp 10.0.0.7:5432: refused", "audit_log": "ok", "oidc_jwks": "pending"})
	want := map[string]string{"database": "failing", "oidc_jwks": "pending"}
	if len(got) != len(want) || got["database"] != want["database"] || got["oidc_jwks"] != want["oidc_jwks"] {
		t.Errorf("summary = %v, want %v", got, want)
	}
}
