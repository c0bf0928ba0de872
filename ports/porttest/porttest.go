// Package porttest holds one conformance suite per store port, in the style
// of go-cloud's drivertest: every adapter of a port (the embedded SQLite
// store, the shared PostgreSQL store) runs the same suite from its own tests,
// so the adapters cannot drift apart in behaviour the application relies on.
//
// A suite takes a factory that returns a new, empty store for each subtest
// and arranges its own cleanup with t.Cleanup.
package porttest

import (
	"context"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Factory opens a new, empty store for one subtest.
type Factory[S any] func(t *testing.T) S

// SharedFactory opens n handles onto one new, empty database, as n service
// instances would hold them.
type SharedFactory[S any] func(t *testing.T, n int) []S

// Context is the context of one test or benchmark that writes to a store:
// it carries the audit intent of a request named after the test, as the
// edge would set it, since stores refuse changes without one.
func Context(tb testing.TB) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	tb.Cleanup(cancel)
	return withIntent(ctx, "porttest "+tb.Name())
}

// ctxFor is Context, under the name the suites use.
func ctxFor(t *testing.T) context.Context {
	t.Helper()
	return Context(t)
}

func withIntent(ctx context.Context, requestID string) context.Context {
	return ports.WithAuditIntent(ctx, &domain.AuditIntent{RequestID: requestID, Subject: "porttest", Roles: []domain.Role{domain.RoleAdmin},
		AuthMethod: domain.MethodAPIKey, Client: "127.0.0.1", Method: "POST", Path: "/porttest"})
}

// base is a fixed instant, so stores are fed times with nanoseconds in them.
var base = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)
