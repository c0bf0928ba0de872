package rest

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentauth/agentauth/adapters/telemetry"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
)

// httpMetrics are the edge's Prometheus metrics. Each Server has its own
// registry (two servers in one process, as in the cluster tests, do not
// share counters); GET /metrics serves it together with the process-wide
// telemetry.Registry.
type httpMetrics struct {
	registry  *prometheus.Registry
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	decisions *prometheus.CounterVec
	// served is the exposition of this registry and telemetry.Registry;
	// handler is the same for Fiber.
	served  http.Handler
	handler fiber.Handler
}

// depther is what the audit log offers to report its queue depth
// (auditlog.Committer does).
type depther interface{ Depth() int64 }

func newHTTPMetrics(s *Server) *httpMetrics {
	m := &httpMetrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentauth_http_requests_total",
			Help: "HTTP requests answered, by method, route template and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agentauth_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests (audit commit included), by method, route template and status.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"method", "route", "status"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentauth_auth_decisions_total",
			Help: "Access decisions on authenticated endpoints, by authentication method and outcome " +
				"(allow, deny, unauthenticated, unavailable, unrouted).",
		}, []string{"method", "outcome"}),
	}
	m.registry.MustRegister(m.requests, m.latency, m.decisions)
	if d, ok := s.uc.AuditLog.(depther); ok {
		m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "agentauth_audit_queue_depth",
			Help: "Audit records handed to the audit log and not yet committed.",
		}, func() float64 { return float64(d.Depth()) }))
	}
	if s.uc.Quotas != nil {
		m.registry.MustRegister(quotaCollector{s.uc.Quotas})
	}
	gatherers := prometheus.Gatherers{m.registry, telemetry.Registry}
	m.served = promhttp.HandlerFor(gatherers, promhttp.HandlerOpts{})
	m.handler = adaptor.HTTPHandler(m.served)
	return m
}

// metricsRoutes serves GET /metrics, authenticated and authorized like every
// API endpoint: a scraper needs a credential whose role grants metrics:read.
func (s *Server) metricsRoutes() []route {
	return []route{{fiber.MethodGet, "/metrics", domain.PermMetricsRead, s.serveMetrics}}
}

func (s *Server) serveMetrics(c *fiber.Ctx) error { return s.metrics.handler(c) }

// statusLabels holds the label of every status code, so that observing a
// request does not format (and allocate) a string.
var statusLabels = func() (l [600]string) {
	for i := range l {
		l[i] = strconv.Itoa(i)
	}
	return l
}()

func statusLabel(code int) string {
	if code < 0 || code >= len(statusLabels) {
		return "other"
	}
	return statusLabels[code]
}

// Outcomes of auth decisions.
const (
	outcomeAllow           = "allow"
	outcomeDeny            = "deny"
	outcomeUnauthenticated = "unauthenticated"
	outcomeUnavailable     = "unavailable"
	outcomeUnrouted        = "unrouted" // authenticated, but no route matched
)

// observe records one answered request. It is called from the access-log
// stage after the chain has run. Labels are the route template (never the
// raw path, so ids do not multiply series), the method and the status;
// none allocates.
func (m *httpMetrics) observe(c *fiber.Ctx, st *reqState, start time.Time) {
	if m == nil {
		return
	}
	status := c.Response().StatusCode()
	method, route := methodLabel(c.Method()), routeLabel(c)
	code := statusLabel(status)
	m.requests.WithLabelValues(method, route, code).Inc()
	m.latency.WithLabelValues(method, route, code).Observe(time.Since(start).Seconds())

	authMethod := string(st.principal.Method)
	if authMethod == "" {
		authMethod = "none"
	}
	var outcome string
	switch {
	case st.decided && st.decision.Allowed:
		outcome = outcomeAllow
	case st.decided:
		outcome = outcomeDeny
	case st.authenticated:
		outcome = outcomeUnrouted
	case status == fiber.StatusUnauthorized && route == unmatchedRoute:
		// Stopped by the authenticate stage. A 401 of a login endpoint
		// (a wrong password) has its own route and is not an access decision.
		outcome = outcomeUnauthenticated
	case status == fiber.StatusServiceUnavailable && route == unmatchedRoute:
		outcome = outcomeUnavailable // the identity provider could not answer
	default:
		return // /health, login endpoints: no access decision was made
	}
	m.decisions.WithLabelValues(authMethod, outcome).Inc()
}

// methodLabel returns a constant for the request method. c.Method() points
// into fasthttp's reused request buffer, and a label value is kept by the
// metric for good: handing it over would let the next request rewrite it.
func methodLabel(m string) string {
	for _, known := range knownMethods {
		if m == known {
			return known
		}
	}
	return "other"
}

var knownMethods = [...]string{fiber.MethodGet, fiber.MethodPost, fiber.MethodPut, fiber.MethodPatch,
	fiber.MethodDelete, fiber.MethodHead, fiber.MethodOptions, fiber.MethodConnect, fiber.MethodTrace}

// unmatchedRoute labels requests answered before they reached a route of
// their own (401 from the authenticate stage, 404): the last route Fiber
// matched for them is a middleware mounted at "/".
const unmatchedRoute = "unmatched"

func routeLabel(c *fiber.Ctx) string {
	r := c.Route()
	if r == nil || r.Path == "/" {
		return unmatchedRoute
	}
	return r.Path
}

// quotaDesc is the calls counted against each limit, and refused.
var quotaDesc = prometheus.NewDesc("agentauth_quota_calls_total",
	"Tool calls counted by this instance against the limit of a policy rule or a tool (limit: \"policy rule pol_…\" or \"tool …\"), "+
		"by outcome: counted, or exceeded (refused quota_exceeded).", []string{"limit", "outcome"}, nil)

// quotaCollector reports app.Quotas' tally at each scrape.
type quotaCollector struct{ q *app.Quotas }

func (c quotaCollector) Describe(ch chan<- *prometheus.Desc) { ch <- quotaDesc }

func (c quotaCollector) Collect(ch chan<- prometheus.Metric) {
	for _, t := range c.q.Tally() {
		ch <- prometheus.MustNewConstMetric(quotaDesc, prometheus.CounterValue, float64(t.Counted), t.Of, "counted")
		ch <- prometheus.MustNewConstMetric(quotaDesc, prometheus.CounterValue, float64(t.Exceeded), t.Of, "exceeded")
	}
}
