package keycloak

import (
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentauth/agentauth/domain"
)

// TestWrongClientSecretIsAServiceFault: the provider refusing this
// service's own client (unauthorized_client, invalid_client: a wrong
// SERVICE_OIDC_CLIENT_SECRET) is not the user's wrong password: the call
// fails with ErrUnavailable (a 503, no count against the user), one
// error-level log line names the setting, and readiness reports it until a
// call with the client succeeds again.
func TestWrongClientSecretIsAServiceFault(t *testing.T) {
	op := newFakeOP(t)
	core, logs := observer.New(zapcore.InfoLevel)
	p, err := New(Config{Issuer: op.issuer, ClientID: testClient, ClientSecret: "not-the-secret", RedirectURI: "http://127.0.0.1:1/auth/callback"}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Discover(t.Context()); err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"password grant", func() error { _, err := p.PasswordGrant(t.Context(), "alice", "alice-pw"); return err }},
		{"refresh", func() error { _, err := p.Refresh(t.Context(), "rt-alice"); return err }},
	}
	for _, c := range calls {
		err := c.call()
		if !errors.Is(err, domain.ErrUnavailable) || errors.Is(err, domain.ErrUnauthenticated) {
			t.Errorf("%s with a wrong client secret: got %v, want ErrUnavailable and not ErrUnauthenticated", c.name, err)
		}
	}
	errorsLogged := logs.FilterLevelExact(zapcore.ErrorLevel).All()
	if len(errorsLogged) != len(calls) {
		t.Errorf("error log lines = %d, want one per refused call (%d): %v", len(errorsLogged), len(calls), errorsLogged)
	}
	for _, e := range errorsLogged {
		if !strings.Contains(e.Message+" "+e.ContextMap()["setting"].(string), "SERVICE_OIDC_CLIENT_SECRET") {
			t.Errorf("log line %q %v does not name SERVICE_OIDC_CLIENT_SECRET", e.Message, e.ContextMap())
		}
	}
	checks := p.Checks()
	if !strings.Contains(checks["oidc_client"], "SERVICE_OIDC_CLIENT_SECRET") {
		t.Errorf("Checks() = %v, want oidc_client naming SERVICE_OIDC_CLIENT_SECRET", checks)
	}

	// Right secret, wrong password: the user's fault, and readiness clears
	// once the client is accepted again.
	good := op.provider(t, nil)
	if _, err := good.PasswordGrant(t.Context(), "alice", "wrong"); !errors.Is(err, domain.ErrUnauthenticated) || errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("wrong password: got %v, want ErrUnauthenticated only", err)
	}
	p.cfg.ClientSecret = testSecret // the operator fixed it (tests only: the secret is read once)
	if _, err := p.PasswordGrant(t.Context(), "alice", "alice-pw"); err != nil {
		t.Fatalf("after the fix: %v", err)
	}
	if got := p.Checks()["oidc_client"]; got != "ok" {
		t.Errorf("oidc_client after a good call = %q, want ok", got)
	}
}
