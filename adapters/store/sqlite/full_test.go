package sqlite_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports/porttest"
)

// TestFullDatabaseIsUnavailable: SQLite's "database or disk is full"
// (SQLITE_FULL) is a store that cannot serve the request now, 503 as every
// store failure, not a 500 of the service's own making; the message still
// says what happened, for the log.
func TestFullDatabaseIsUnavailable(t *testing.T) {
	ctx := porttest.Context(t)
	st := newStore(t)
	if err := sqlite.CapAtPresentSize(ctx, st); err != nil {
		t.Fatal(err)
	}
	var err error
	for i := 0; i < 10000 && err == nil; i++ {
		err = st.CreateSession(ctx, domain.Session{ID: fmt.Sprintf("s%05d", i), Owner: "alice", Title: strings.Repeat("t", 200),
			Mode: domain.ModeAsk, State: domain.SessionActive, CreatedAt: time.Now()})
	}
	if err == nil {
		t.Fatal("10,000 sessions fitted in a database capped at its size")
	}
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("got %v, want an error wrapping domain.ErrUnavailable", err)
	}
	if got, want := err.Error(), "database or disk is full"; !strings.Contains(got, want) {
		t.Errorf("got %q, want it to contain %q", got, want)
	}
}
