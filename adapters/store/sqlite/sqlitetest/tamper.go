// Package sqlitetest tampers with an audit log in a SQLite database the way
// an attacker with write access to the file would, for the tests that show
// verification names each kind of tampering. Run it only while no service
// has the database open.
package sqlitetest

import (
	"context"
	"database/sql"
	"testing"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/sqlite"
)

func exec(t testing.TB, path, query string, args ...any) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// EditRecord changes record seq's subject and leaves its hash.
func EditRecord(t testing.TB, path string, seq int64) {
	exec(t, path, `UPDATE audit SET subject = 'someone-else' WHERE seq = ?`, seq)
}

// DeleteRecords deletes records from..to.
func DeleteRecords(t testing.TB, path string, from, to int64) {
	exec(t, path, `DELETE FROM audit WHERE seq BETWEEN ? AND ?`, from, to)
}

// EmptyAuditIndex deletes the index of the audit log (SQLite mode keeps
// the records in the log, and only where they are in the database).
func EmptyAuditIndex(t testing.TB, path string) {
	exec(t, path, `DELETE FROM audit_block`)
	exec(t, path, `DELETE FROM audit_posting`)
}

// RewriteTail replaces every record from seq on by a forged copy (another
// subject) with hashes recomputed from the record before: the chain of
// links holds, only a signed checkpoint can tell.
func RewriteTail(t testing.TB, path string, from int64) {
	t.Helper()
	st, closeStore, err := sqlite.Open(sqlite.Path(path), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	tail, err := st.AuditChain(context.Background(), from-1, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	DeleteRecords(t, path, from, 1<<62)
	for i := range tail {
		tail[i].Subject = "forged"
	}
	// The store seals each again: seq from the head, prev from the record
	// before, hash recomputed.
	if err := st.AppendAudit(context.Background(), tail); err != nil {
		t.Fatal(err)
	}
}

// DeleteCheckpoints deletes the checkpoints from seq on.
func DeleteCheckpoints(t testing.TB, path string, from int64) {
	exec(t, path, `DELETE FROM audit_checkpoint WHERE seq >= ?`, from)
}

// ForgeCheckpoint points the latest checkpoint at another hash without a
// valid signature for it.
func ForgeCheckpoint(t testing.TB, path string) {
	exec(t, path, `UPDATE audit_checkpoint SET hash = (SELECT hash FROM audit WHERE seq = 1)
		WHERE seq = (SELECT max(seq) FROM audit_checkpoint)`)
}
