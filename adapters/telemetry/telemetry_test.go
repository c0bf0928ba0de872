package telemetry

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
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
