package rest

import (
	"context"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/identity/apikey"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
)

// discardAudit accepts every record at once, so that the allocations
// measured are the edge's own.
type discardAudit struct{}

func (discardAudit) Record(context.Context, domain.AuditRecord) error { return nil }

// TestObservingAllocatesNothing measures whole requests through the handler
// chain with and without the metrics observation: it must add no
// allocation per request, once each series exists.
func TestObservingAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	authz, err := domain.NewAuthorizer(nil)
	if err != nil {
		t.Fatal(err)
	}
	const key = "metrics-alloc-test-key-000000001"
	ring := apikey.NewKeyring([]apikey.Entry{{Key: key, Principal: domain.Principal{Subject: "admin", Roles: []domain.Role{domain.RoleAdmin}, Method: domain.MethodAPIKey}}})
	s, err := New(Config{ShutdownTimeout: time.Second}, app.Application{Authenticator: ring, Authorizer: authz, AuditLog: discardAudit{}}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	handler := s.app.Handler()
	tests := []struct {
		name, method, path, auth string
		wantStatus               int
	}{
		{"health", "GET", "/health", "", 200},
		{"unauthenticated", "GET", "/api/v2/me", "", 401},
		{"allowed", "GET", "/api/v2/me", "Bearer " + key, 200},
		{"unrouted", "DELETE", "/api/v2/nothing-here", "Bearer " + key, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fctx fasthttp.RequestCtx
			run := func() {
				fctx.Request.Reset()
				fctx.Response.Reset()
				fctx.Request.Header.SetMethod(tt.method)
				fctx.Request.SetRequestURI(tt.path)
				if tt.auth != "" {
					fctx.Request.Header.Set("Authorization", tt.auth)
				}
				handler(&fctx)
			}
			run()
			if got := fctx.Response.StatusCode(); got != tt.wantStatus {
				t.Fatalf("%s %s = %d, want %d", tt.method, tt.path, got, tt.wantStatus)
			}
			with := testing.AllocsPerRun(200, run)
			m := s.metrics
			s.metrics = nil
			without := testing.AllocsPerRun(200, run)
			s.metrics = m
			if with > without {
				t.Errorf("%s %s: %.1f allocations per request with metrics, %.1f without; want no more", tt.method, tt.path, with, without)
			}
		})
	}
}
