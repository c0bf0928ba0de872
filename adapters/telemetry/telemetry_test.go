package telemetry

import (
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentauth/agentauth/domain"
)

func TestJWKSRefreshedCountsByOutcome(t *testing.T) {
	okBefore, errBefore := testutil.ToFloat64(jwksOK), testutil.ToFloat64(jwksError)
	JWKSRefreshed(nil)
	JWKSRefreshed(nil)
	JWKSRefreshed(errors.New("GET https://idp/certs: status 503"))
	if got, want := testutil.ToFloat64(jwksOK)-okBefore, 2.0; got != want {
		t.Errorf("ok refreshes counted = %v, want %v", got, want)
	}
	if got, want := testutil.ToFloat64(jwksError)-errBefore, 1.0; got != want {
		t.Errorf("failed refreshes counted = %v, want %v", got, want)
	}
	if n, err := testutil.GatherAndCount(Registry, "agentauth_jwks_refreshes_total"); err != nil || n != 2 {
		t.Errorf("Registry series of agentauth_jwks_refreshes_total = %d, %v; want 2 (ok, error)", n, err)
	}
}

func TestLoginAttemptedClassifies(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		outcome string
		lockout bool
	}{
		{"ok", nil, LoginOK, false},
		{"wrong password", fmt.Errorf("keycloak: password grant refused: %w", domain.ErrUnauthenticated), LoginRefused, false},
		{"locked out", fmt.Errorf("too many failures: %w", domain.ErrTooManyRequests), LoginLockedOut, true},
		{"provider down", fmt.Errorf("keycloak: %w", domain.ErrUnavailable), LoginUnavailable, false},
		{"unknown state", fmt.Errorf("no such login: %w", domain.ErrNotFound), LoginInvalid, false},
		{"anything else", errors.New("boom"), LoginError, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := loginAttempts.WithLabelValues(LoginPassword, tt.outcome)
			before, locksBefore := testutil.ToFloat64(c), testutil.ToFloat64(lockouts)
			LoginAttempted(LoginPassword, tt.err)
			if got := testutil.ToFloat64(c) - before; got != 1 {
				t.Errorf("%s counted %v times, want 1", tt.outcome, got)
			}
			if got, want := testutil.ToFloat64(lockouts)-locksBefore, map[bool]float64{true: 1}[tt.lockout]; got != want {
				t.Errorf("lock-outs counted %v, want %v", got, want)
			}
		})
	}
}

func TestHybridCounters(t *testing.T) {
	hits, misses := testutil.ToFloat64(hybridHit), testutil.ToFloat64(hybridMiss)
	HybridLookup(true)
	HybridLookup(false)
	HybridLookup(false)
	if testutil.ToFloat64(hybridHit)-hits != 1 || testutil.ToFloat64(hybridMiss)-misses != 2 {
		t.Errorf("cache lookups: hits +%v misses +%v, want +1 +2", testutil.ToFloat64(hybridHit)-hits, testutil.ToFloat64(hybridMiss)-misses)
	}
	for _, tt := range []struct {
		err     error
		outcome string
	}{{nil, "ok"}, {fmt.Errorf("x: %w", domain.ErrUnauthenticated), "refused"}, {fmt.Errorf("x: %w", domain.ErrUnavailable), "error"}} {
		c := hybridRequests.WithLabelValues(tt.outcome)
		before := testutil.ToFloat64(c)
		HybridCalled(tt.err)
		if testutil.ToFloat64(c)-before != 1 {
			t.Errorf("HybridCalled(%v) did not count %s", tt.err, tt.outcome)
		}
	}
}

// TestSeriesAreBounded: every label value is a constant, so the series
// exist from the start and their number is fixed.
func TestSeriesAreBounded(t *testing.T) {
	for name, want := range map[string]int{
		"agentauth_build_info":            1,
		"agentauth_login_attempts_total":  len(loginKinds) * len(loginOutcomes),
		"agentauth_idp_requests_total":    len(idpCalls) * len(idpOutcomes),
		"agentauth_hybrid_requests_total": 3,
	} {
		if n, err := testutil.GatherAndCount(Registry, name); err != nil || n != want {
			t.Errorf("%s: %d series (%v), want %d", name, n, err, want)
		}
	}
}
