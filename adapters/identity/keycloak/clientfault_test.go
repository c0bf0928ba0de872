package keycloak

import (
	"errors"
	"fmt"
	"strconv"
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
	p, err := New(Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: op.issuer, ClientID: testClient, ClientSecret: "not-the-secret", RedirectURI: "http://127.0.0.1:1/auth/callback"}, zap.New(core))
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
		// Keycloak 26.7 answers 401 invalid_client "Client authentication
		// failed." (agentauth oidc check asks introspection to check the
		// secret).
		{"introspection", func() error { _, err := p.Introspect(t.Context(), "agentauth-oidc-check"); return err }},
	}
	for _, c := range calls {
		err := c.call()
		if !errors.Is(err, domain.ErrUnavailable) || !errors.Is(err, ErrClientRefused) || errors.Is(err, domain.ErrUnauthenticated) {
			t.Errorf("%s with a wrong client secret: got %v, want ErrUnavailable and ErrClientRefused, not ErrUnauthenticated", c.name, err)
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

// TestProviderErrorClasses: only invalid_grant is the user's failure;
// codes that blame the request or the client's grants are configuration
// faults (a 503, one error line naming what to fix) that leave readiness
// alone; only the client's own credentials being refused makes the
// service unready.
func TestProviderErrorClasses(t *testing.T) {
	for _, tc := range []struct {
		code      string
		status    int
		wantUser  bool
		wantUnrdy bool
		wantNames string
	}{
		{code: "invalid_grant", wantUser: true},
		{code: "invalid_client", status: 401, wantUnrdy: true, wantNames: "SERVICE_OIDC_CLIENT_SECRET"},
		{code: "unauthorized_client", status: 401, wantUnrdy: true, wantNames: "SERVICE_OIDC_CLIENT_SECRET"}, // Keycloak's answer to a wrong secret
		{code: "unauthorized_client", status: 400, wantNames: "auth.oidc.passwordLogin"},
		{code: "unsupported_grant_type", wantNames: "auth.oidc.passwordLogin"},
		{code: "invalid_request", wantNames: "auth.oidc.passwordLogin"},
		{code: "invalid_scope", wantNames: "auth.oidc.scopes"},
	} {
		t.Run(tc.code+"/"+strconv.Itoa(tc.status), func(t *testing.T) {
			op := newFakeOPAt(t, "/oauth2/default")
			op.grants = []string{"authorization_code", "refresh_token", "password"}
			core, logs := observer.New(zapcore.InfoLevel)
			p, err := New(Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: op.issuer, Generic: true, ClientID: testClient, ClientSecret: testSecret}, zap.New(core))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Discover(t.Context()); err != nil {
				t.Fatal(err)
			}
			op.tokenError, op.tokenStatus = tc.code, tc.status
			_, err = p.PasswordGrant(t.Context(), "alice", "alice-pw")
			if got := errors.Is(err, domain.ErrUnauthenticated); got != tc.wantUser {
				t.Errorf("the user's failure: got %v (%v), want %v", got, err, tc.wantUser)
			}
			if !tc.wantUser && !errors.Is(err, domain.ErrUnavailable) {
				t.Errorf("got %v, want ErrUnavailable (a service fault)", err)
			}
			if got := p.Checks()["oidc_client"] != "ok"; got != tc.wantUnrdy {
				t.Errorf("readiness affected: got %v (%v), want %v", got, p.Checks(), tc.wantUnrdy)
			}
			lines := logs.FilterLevelExact(zapcore.ErrorLevel).All()
			if tc.wantNames == "" {
				if len(lines) != 0 {
					t.Errorf("error lines: %v, want none", lines)
				}
				return
			}
			if len(lines) != 1 || !strings.Contains(fmt.Sprint(lines[0].Message, lines[0].ContextMap()), tc.wantNames) {
				t.Errorf("error lines: %v, want one naming %s", lines, tc.wantNames)
			}
		})
	}
}

// TestPasswordLoginOnlyWhereAdvertised: a generic provider whose
// discovery document does not list the password grant is not asked; the
// answer names auth.oidc.passwordLogin.
func TestPasswordLoginOnlyWhereAdvertised(t *testing.T) {
	for _, tc := range []struct {
		name    string
		generic bool
		grants  []string
		want    bool
	}{
		{"generic, listed", true, []string{"authorization_code", "password"}, true},
		{"generic, not listed", true, []string{"authorization_code", "refresh_token"}, false},
		{"generic, not said (OpenID Discovery's default)", true, nil, false},
		{"Keycloak, not said", false, nil, true},
		{"Keycloak, not listed", false, []string{"authorization_code"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := newFakeOP(t)
			op.grants = tc.grants
			p := op.provider(t, func(c *Config) { c.Generic = tc.generic })
			if got := p.PasswordGrantOffered(); got != tc.want {
				t.Errorf("PasswordGrantOffered() = %v, want %v", got, tc.want)
			}
			_, err := p.PasswordGrant(t.Context(), "alice", "alice-pw")
			if tc.want {
				if err != nil {
					t.Errorf("PasswordGrant: %v", err)
				}
				return
			}
			if !errors.Is(err, domain.ErrNotFound) || !strings.Contains(err.Error(), "auth.oidc.passwordLogin") || op.tokenHits.Load() != 0 {
				t.Errorf("got %v after %d token calls, want ErrNotFound naming auth.oidc.passwordLogin and no call", err, op.tokenHits.Load())
			}
		})
	}
}
