package rest_test

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads GET /metrics as ADMIN and parses the text format.
func scrape(t *testing.T, h harness) map[string]*dto.MetricFamily {
	t.Helper()
	r := h.do(t, "GET", "/metrics", bearer(keyAdmin), "")
	if r.status != 200 {
		t.Fatalf("GET /metrics as ADMIN = %d %s, want 200", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q, want the Prometheus text format", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(r.body)))
	if err != nil {
		t.Fatalf("GET /metrics body is not the Prometheus text format: %v\n%s", err, r.body)
	}
	return families
}

// value returns the counter, gauge or histogram count of the series of name
// whose labels include want, and whether it exists.
func value(families map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f, ok := families[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func TestMetricsNeedMetricsRead(t *testing.T) {
	h := start(t, options{})
	tests := []struct {
		name       string
		auth       string
		wantStatus int
	}{
		{"no credential", "", 401},
		{"unknown key", bearer("not-a-key-not-a-key"), 401},
		{"USER lacks metrics:read", bearer(keyUser), 403},
		{"AUDITOR lacks metrics:read", bearer(keyAuditor), 403},
		{"ADMIN", bearer(keyAdmin), 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(t, "GET", "/metrics", tt.auth, "")
			if r.status != tt.wantStatus {
				t.Fatalf("GET /metrics = %d, want %d (body %s)", r.status, tt.wantStatus, r.body)
			}
			if tt.wantStatus != 200 && strings.Contains(string(r.body), "agentauth_http_requests_total") {
				t.Errorf("a refused scrape received metrics: %s", r.body)
			}
		})
	}
}

func TestMetricsCountRequestsAndDecisions(t *testing.T) {
	h := start(t, options{})
	// The traffic whose traces the scrape must show.
	for i := 0; i < 3; i++ {
		h.do(t, "GET", "/api/v2/sessions", bearer(keyUser), "")
	}
	h.do(t, "GET", "/api/v2/sessions/does-not-exist", bearer(keyUser), "")
	h.do(t, "GET", "/api/v2/sessions/also-missing", bearer(keyUser), "")
	h.do(t, "PUT", "/api/v2/admin/settings", bearer(keyUser), `{"security_gateway":true,"default_session_mode":"auto"}`)
	h.do(t, "GET", "/api/v2/sessions", "", "")
	h.do(t, "GET", "/api/v2/sessions", bearer("not-a-key-not-a-key"), "")
	h.do(t, "GET", "/health", "", "")

	families := scrape(t, h)
	tests := []struct {
		name   string
		metric string
		labels map[string]string
		want   float64
	}{
		{"allowed list", "agentauth_http_requests_total", map[string]string{"method": "GET", "route": "/api/v2/sessions", "status": "200"}, 3},
		{"route template, not the raw path", "agentauth_http_requests_total", map[string]string{"method": "GET", "route": "/api/v2/sessions/:id", "status": "404"}, 2},
		{"refused by role", "agentauth_http_requests_total", map[string]string{"method": "PUT", "route": "/api/v2/admin/settings", "status": "403"}, 1},
		{"stopped before routing", "agentauth_http_requests_total", map[string]string{"method": "GET", "route": "unmatched", "status": "401"}, 2},
		{"health", "agentauth_http_requests_total", map[string]string{"method": "GET", "route": "/health", "status": "200"}, 1},
		{"latency histogram", "agentauth_http_request_duration_seconds", map[string]string{"method": "GET", "route": "/api/v2/sessions", "status": "200"}, 3},
		{"allow decisions", "agentauth_auth_decisions_total", map[string]string{"method": "api_key", "outcome": "allow"}, 5},
		{"deny decisions", "agentauth_auth_decisions_total", map[string]string{"method": "api_key", "outcome": "deny"}, 1},
		{"unauthenticated", "agentauth_auth_decisions_total", map[string]string{"method": "none", "outcome": "unauthenticated"}, 2},
		{"audit queue idle", "agentauth_audit_queue_depth", nil, 0},
		{"jwks refreshes exported", "agentauth_jwks_refreshes_total", map[string]string{"outcome": "ok"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := value(families, tt.metric, tt.labels)
			if !ok {
				t.Fatalf("%s%v is missing from /metrics", tt.metric, tt.labels)
			}
			if got != tt.want {
				t.Errorf("%s%v = %v, want %v", tt.metric, tt.labels, got, tt.want)
			}
		})
	}
	for name := range families {
		if strings.Contains(name, "does-not-exist") {
			t.Errorf("a raw path became part of a metric: %s", name)
		}
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), "missing") || strings.Contains(l.GetValue(), "not-a-key") {
					t.Errorf("label %s=%q of %s comes from the request", l.GetName(), l.GetValue(), f.GetName())
				}
			}
		}
	}
}
