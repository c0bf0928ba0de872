package telemetry

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/buildinfo"
)

// Label values are constants, so every series exists from the start (a
// dashboard sees 0, not "no data") and no label comes from a request.

// Login kinds.
const (
	LoginPassword = "password"
	LoginCode     = "code" // the browser's authorization-code callback
)

// Login outcomes.
const (
	LoginOK          = "ok"
	LoginRefused     = "refused"     // wrong credentials, or the provider refused
	LoginLockedOut   = "locked_out"  // too many failures of the user or the address
	LoginUnavailable = "unavailable" // the provider or the store could not answer
	LoginInvalid     = "invalid"     // a malformed request, an unknown or replayed state
	LoginError       = "error"
)

// Identity-provider calls.
const (
	IdPDiscovery     = "discovery"
	IdPJWKS          = "jwks"
	IdPCodeExchange  = "code_exchange"
	IdPPasswordGrant = "password_grant"
	IdPRefresh       = "refresh"
	IdPLogout        = "logout"
	IdPIntrospection = "introspection"
	IdPUserinfo      = "userinfo"
)

// Identity-provider outcomes (the kinds of error besides ok).
const (
	IdPOK          = "ok"
	IdPRefused     = "refused"     // a 4xx answer: the provider said no
	IdPTLS         = "tls"         // its certificate is not trusted
	IdPTimeout     = "timeout"     // no answer in time
	IdPUnreachable = "unreachable" // no connection
	IdPBadAnswer   = "bad_answer"  // a 5xx or an answer that does not parse or verify
)

var (
	buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "agentauth_build_info",
		Help: "Always 1; the labels say which build runs.",
	}, []string{"version", "revision", "go_version"})

	loginAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentauth_login_attempts_total",
		Help: "Logins at /auth/login (password) and /auth/callback (code), by kind and outcome.",
	}, []string{"kind", "outcome"})
	lockouts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "agentauth_login_lockouts_total",
		Help: "Password logins refused because the user or the client address had too many recent failures.",
	})

	idpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentauth_idp_requests_total",
		Help: "Calls to the identity provider, by call and outcome (ok or the kind of error).",
	}, []string{"call", "outcome"})

	hybridRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentauth_hybrid_requests_total",
		Help: "Calls to the central instance in hybrid mode, by outcome (ok, refused, error).",
	}, []string{"outcome"})
	hybridCache = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentauth_hybrid_cache_lookups_total",
		Help: "Hybrid-mode principal cache lookups, by result (hit, miss).",
	}, []string{"result"})
	hybridHit  = hybridCache.WithLabelValues("hit")
	hybridMiss = hybridCache.WithLabelValues("miss")

	databaseProbes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentauth_database_probes_total",
		Help: "Readiness probes of the database, by outcome (ok, error).",
	}, []string{"outcome"})
)

var (
	loginKinds    = []string{LoginPassword, LoginCode}
	loginOutcomes = []string{LoginOK, LoginRefused, LoginLockedOut, LoginUnavailable, LoginInvalid, LoginError}
	idpCalls      = []string{IdPDiscovery, IdPJWKS, IdPCodeExchange, IdPPasswordGrant, IdPRefresh, IdPLogout, IdPIntrospection, IdPUserinfo}
	idpOutcomes   = []string{IdPOK, IdPRefused, IdPTLS, IdPTimeout, IdPUnreachable, IdPBadAnswer}
)

func init() {
	Registry.MustRegister(buildInfo, loginAttempts, lockouts, idpRequests, hybridRequests, hybridCache, databaseProbes)
	b := buildinfo.Get()
	buildInfo.WithLabelValues(b.Version, b.Revision, b.GoVersion).Set(1)
	for _, k := range loginKinds {
		for _, o := range loginOutcomes {
			loginAttempts.WithLabelValues(k, o)
		}
	}
	for _, c := range idpCalls {
		for _, o := range idpOutcomes {
			idpRequests.WithLabelValues(c, o)
		}
	}
	for _, o := range []string{"ok", "refused", "error"} {
		hybridRequests.WithLabelValues(o)
	}
	databaseProbes.WithLabelValues("ok")
	databaseProbes.WithLabelValues("error")
}

// LoginAttempted counts one login of kind (LoginPassword, LoginCode) that
// ended with err, classified by its domain error.
func LoginAttempted(kind string, err error) {
	outcome := LoginOK
	switch {
	case err == nil:
	case errors.Is(err, domain.ErrTooManyRequests):
		outcome = LoginLockedOut
		lockouts.Inc()
	case errors.Is(err, domain.ErrUnauthenticated):
		outcome = LoginRefused
	case errors.Is(err, domain.ErrUnavailable):
		outcome = LoginUnavailable
	case errors.Is(err, domain.ErrInvalidInput), errors.Is(err, domain.ErrNotFound):
		outcome = LoginInvalid
	default:
		outcome = LoginError
	}
	loginAttempts.WithLabelValues(kind, outcome).Inc()
}

// IdPCalled counts one call to the identity provider with its outcome (one
// of the IdP* outcome constants; the adapter knows how to classify its
// client's errors).
func IdPCalled(call, outcome string) {
	idpRequests.WithLabelValues(call, outcome).Inc()
}

// HybridLookup counts one principal cache lookup in hybrid mode.
func HybridLookup(hit bool) {
	if hit {
		hybridHit.Inc()
		return
	}
	hybridMiss.Inc()
}

// HybridCalled counts one call to the central instance that ended with err.
func HybridCalled(err error) {
	outcome := "ok"
	switch {
	case err == nil:
	case errors.Is(err, domain.ErrUnauthenticated):
		outcome = "refused"
	default:
		outcome = "error"
	}
	hybridRequests.WithLabelValues(outcome).Inc()
}

// DatabaseProbed counts one readiness probe of the database.
func DatabaseProbed(err error) {
	if err != nil {
		databaseProbes.WithLabelValues("error").Inc()
		return
	}
	databaseProbes.WithLabelValues("ok").Inc()
}
