// Package telemetry holds the process-wide Prometheus metrics that adapters
// other than the HTTP edge report, and the registry they live in. An
// adapter reports with one call (telemetry.JWKSRefreshed(err)); the edge's
// GET /metrics serves this registry together with its own.
//
// The registry is per process, not per server, because what it counts (key
// fetches, the Go runtime) belongs to the process.
package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Registry holds the process-wide metrics.
var Registry = prometheus.NewRegistry()

var jwksRefreshes = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "agentauth_jwks_refreshes_total",
	Help: "Fetches of the identity provider's JWKS (signing keys), by outcome (ok, error).",
}, []string{"outcome"})

var (
	jwksOK    = jwksRefreshes.WithLabelValues("ok")
	jwksError = jwksRefreshes.WithLabelValues("error")
)

func init() {
	Registry.MustRegister(
		jwksRefreshes,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
}

// JWKSRefreshed counts one fetch of the JWKS; err is its outcome.
func JWKSRefreshed(err error) {
	if err != nil {
		jwksError.Inc()
		return
	}
	jwksOK.Inc()
}
