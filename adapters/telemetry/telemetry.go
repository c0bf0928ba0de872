// Package telemetry holds the process-wide Prometheus metrics that adapters
// other than the HTTP edge report, and the registry they live in. An
// adapter reports with one call (telemetry.JWKSRefreshed(err)); the edge's
// GET /metrics serves this registry together with its own.
//
// The registry is per process, not per server, because what it counts (key
// fetches, the Go runtime) belongs to the process.
package telemetry

import (
	"time"

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

var (
	auditCommits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentauth_audit_commits_total",
		Help: "Group commits of audit records, by outcome (ok, error).",
	}, []string{"outcome"})
	auditCommitSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "agentauth_audit_commit_duration_seconds",
		Help:    "Time of one group commit of audit records (one transaction, one fsync).",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	})
	auditCommitOK    = auditCommits.WithLabelValues("ok")
	auditCommitError = auditCommits.WithLabelValues("error")
)

// The outcomes of approvals webhook notices.
const (
	WebhookDelivered     = "delivered"
	WebhookAttemptFailed = "attempt_failed"
	WebhookGivenUp       = "given_up"
	WebhookDropped       = "dropped"
)

var approvalWebhook = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "agentauth_approval_webhook_notices_total",
	Help: "Approvals webhook notices, by outcome: delivered; attempt_failed (an attempt that failed, retried or not); given_up (every attempt failed, or the process stopped first); dropped (the queue was full).",
}, []string{"outcome"})

// ApprovalWebhook counts one notice's (or attempt's) outcome.
func ApprovalWebhook(outcome string) { approvalWebhook.WithLabelValues(outcome).Inc() }

func init() {
	Registry.MustRegister(
		approvalWebhook,
		jwksRefreshes,
		auditCommits,
		auditCommitSeconds,
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

// AuditCommitted counts one group commit that took d; err is its outcome.
func AuditCommitted(d time.Duration, err error) {
	auditCommitSeconds.Observe(d.Seconds())
	if err != nil {
		auditCommitError.Inc()
		return
	}
	auditCommitOK.Inc()
}
