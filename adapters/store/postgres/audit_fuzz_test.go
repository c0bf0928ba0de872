package postgres_test

import (
	"testing"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/ports/porttest"
)

// FuzzAuditRecordFields: arbitrary bytes in every caller-chosen field
// never fail a PostgreSQL batch and keep the chain verifiable.
func FuzzAuditRecordFields(f *testing.F) {
	porttest.FuzzAuditStore(f, open(f, pgtest.URL(f)))
}
