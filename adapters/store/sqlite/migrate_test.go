package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// TestCompactAuditMigrationKeepsTheChain: records written in the first
// audit table shape survive migration 0004 with their hash chain intact.
func TestCompactAuditMigrationKeepsTheChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentauth.db")
	old, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(`
CREATE TABLE schema_migrations (version TEXT PRIMARY KEY);
INSERT INTO schema_migrations VALUES ('0001_init'), ('0002_access'), ('0003_login');
CREATE TABLE audit (seq INTEGER PRIMARY KEY, time INTEGER NOT NULL, request_id TEXT NOT NULL, subject TEXT NOT NULL,
  roles TEXT NOT NULL, auth_method TEXT NOT NULL, method TEXT NOT NULL, path TEXT NOT NULL, decision TEXT NOT NULL,
  reason TEXT NOT NULL, status INTEGER NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
CREATE INDEX audit_subject_seq ON audit (subject, seq);
CREATE INDEX audit_time ON audit (time);
CREATE TABLE policies (id TEXT PRIMARY KEY, created_at INTEGER); -- of 0002_access: the policy-version triggers need it, 0013 indexes it
CREATE TABLE projects (id TEXT PRIMARY KEY, created_at INTEGER); -- of 0002_access: 0013 indexes it
CREATE TABLE login_sessions (id_hash TEXT PRIMARY KEY, subject TEXT NOT NULL); -- of 0003_login: 0008 adds to it
CREATE TABLE sessions (id TEXT PRIMARY KEY, owner TEXT, project TEXT, created_at INTEGER); -- of 0001_init: 0009 adds to it, 0013 indexes it
CREATE TABLE servers (name TEXT PRIMARY KEY, created_at INTEGER); -- of 0002_access: 0011 adds to it, 0013 indexes it
CREATE TABLE tool_calls (id TEXT PRIMARY KEY, session TEXT, tool TEXT, status TEXT, created_at INTEGER); -- of 0002_access: 0011 adds to it, 0013 and 0015 index it
CREATE TABLE agents (id TEXT PRIMARY KEY, session TEXT, created_at INTEGER); -- of 0002_access: 0013 indexes it
CREATE TABLE tools (name TEXT PRIMARY KEY, created_at INTEGER); -- of 0002_access: 0011 adds to it, 0013 indexes it`); err != nil {
		t.Fatal(err)
	}
	prev := domain.GenesisHash
	var want []domain.AuditRecord
	for i := int64(1); i <= 3; i++ {
		r := domain.AuditRecord{Seq: i, Time: time.UnixMicro(1_700_000_000_000_000 + i).UTC(), RequestID: "req-" + strings.Repeat("x", int(i)),
			Subject: "alice", Roles: []domain.Role{domain.RoleUser, domain.RoleLead}, AuthMethod: domain.MethodOIDC, Method: "GET",
			Path: "/api/v2/sessions", Decision: domain.AuditAllow, Reason: `role USER grants "sessions:read"`, Status: 200, PrevHash: prev, Version: domain.AuditV1}
		r.Hash = r.ChainHash()
		prev = r.Hash
		want = append(want, r)
		if _, err := old.Exec(`INSERT INTO audit VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.Seq, r.Time.UnixMicro(), r.RequestID, r.Subject,
			"USER,LEAD", string(r.AuthMethod), r.Method, r.Path, string(r.Decision), r.Reason, r.Status, r.PrevHash, r.Hash); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	st := open(t, path) // applies 0004
	got, err := st.AuditChain(context.Background(), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if br := domain.VerifyChain(domain.GenesisHash, got); br != nil || len(got) != len(want) {
		t.Fatalf("after migration: %d records, break %+v; want %d intact", len(got), br, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.RequestID != w.RequestID || g.Reason != w.Reason || g.Status != w.Status || len(g.Roles) != 2 || g.AuthMethod != w.AuthMethod || !g.Time.Equal(w.Time) {
			t.Errorf("record %d = %+v, want %+v", i, g, w)
		}
	}
	// New records extend the migrated chain.
	if err := st.AppendAudit(context.Background(), []domain.AuditRecord{{Time: time.Now(), RequestID: "new", Subject: "bob", Decision: domain.AuditDeny, Status: 403}}); err != nil {
		t.Fatal(err)
	}
	all, _ := st.AuditChain(context.Background(), 0, 10)
	if br := domain.VerifyChain(domain.GenesisHash, all); br != nil || len(all) != 4 {
		t.Errorf("after append: %d records, break %+v", len(all), br)
	}
}
