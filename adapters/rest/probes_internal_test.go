package rest

import (
	"context"
	"errors"
	"strings"
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

// TestPageEscapesEverything: whatever a message or a link holds, the page
// shows it as text.
func TestPageEscapesEverything(t *testing.T) {
	var b strings.Builder
	err := pageTemplate.Execute(&b, page{Title: `<b>t</b>`, Message: `<script>alert(1)</script>`, LoginURL: `javascript:alert(1)`, RequestID: `"><img src=x>`, Status: 401})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, bad := range []string{"<script>", "<b>t</b>", `href="javascript:`, `"><img`} {
		if strings.Contains(out, bad) {
			t.Errorf("page holds %q unescaped:\n%s", bad, out)
		}
	}
}
