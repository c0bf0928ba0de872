package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/agentauth/agentauth/ports/porttest"
)

// FuzzAuditRecordFields: arbitrary bytes in every caller-chosen field keep
// the SQLite chain verifiable.
func FuzzAuditRecordFields(f *testing.F) {
	porttest.FuzzAuditStore(f, open(f, filepath.Join(f.TempDir(), "fuzz.db")))
}
