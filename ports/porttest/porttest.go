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
)

// Factory opens a new, empty store for one subtest.
type Factory[S any] func(t *testing.T) S

// SharedFactory opens n handles onto one new, empty database, as n service
// instances would hold them.
type SharedFactory[S any] func(t *testing.T, n int) []S

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// base is a fixed instant, so stores are fed times with nanoseconds in them.
var base = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)
