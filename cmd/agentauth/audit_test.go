package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditjson"
	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/adapters/auditsign"
	"github.com/agentauth/agentauth/adapters/store/postgres"
	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/adapters/store/sqlite/sqlitetest"
	"github.com/agentauth/agentauth/domain"
)

// auditFixture writes 12 records to a new SQLite database in dir with
// signed checkpoints (every 5 records and at the end), and returns the
// database path, the public key file and the checkpoint log lines.
func auditFixture(t *testing.T, dir string) (db, pub string, logLines []byte) {
	t.Helper()
	db = filepath.Join(dir, "agentauth.db")
	st, closeStore, err := sqlite.Open(sqlite.Path(db), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	signer, closeSigner, err := auditsign.New(st, auditsign.Settings{DataDir: dir, Every: 5, Interval: time.Hour, Out: &out}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		rec := []domain.AuditRecord{{Time: time.Now(), RequestID: "r" + string(rune('a'+i)), Subject: "uma", Method: "GET",
			Path: "/api/v2/sessions", Decision: domain.AuditAllow, Reason: "role USER grants sessions:read", Status: 200}}
		if err := st.AppendAudit(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		signer.Observe(rec[0].Seq, rec[0].Hash)
	}
	closeSigner() // the last checkpoint, at 12
	closeStore()
	return db, auditsign.PublicKeyPath(dir), out.Bytes()
}

func runCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, map[string]string{}, &stdout, &stderr)
	return code, stdout.String() + stderr.String()
}

// TestAuditVerifyCommandNamesTampering: `agentauth audit verify` on the
// database names each kind of tampering and exits 1; an intact log exits 0.
func TestAuditVerifyCommandNamesTampering(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, db string)
		want   []string // kinds in the output; none: OK
	}{
		{"untouched", func(*testing.T, string) {}, nil},
		{"edited record", func(t *testing.T, db string) { sqlitetest.EditRecord(t, db, 3) }, []string{"edited", "seq 3 "}},
		{"deleted record", func(t *testing.T, db string) { sqlitetest.DeleteRecords(t, db, 4, 5) }, []string{"deleted", "seq 4-5"}},
		{"truncated tail", func(t *testing.T, db string) { sqlitetest.DeleteRecords(t, db, 9, 12) }, []string{"truncated", "seq 9-12"}},
		{"tail rewritten with recomputed hashes", func(t *testing.T, db string) { sqlitetest.RewriteTail(t, db, 7) }, []string{"rewritten", "seq 12"}},
		{"checkpoint forged", func(t *testing.T, db string) { sqlitetest.ForgeCheckpoint(t, db) }, []string{"checkpoint_invalid"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, pub, _ := auditFixture(t, t.TempDir())
			tt.tamper(t, db)
			code, out := runCLI(t, "audit", "verify", "--db", db, "--public-key", pub)
			if tt.want == nil {
				if code != 0 || !strings.Contains(out, "OK: the chain holds") || !strings.Contains(out, "records checked: 12") {
					t.Errorf("exit %d, output:\n%s\nwant 0 and OK over 12 records", code, out)
				}
				return
			}
			if code != 1 || !strings.Contains(out, "BROKEN") {
				t.Errorf("exit %d, output:\n%s\nwant 1 and BROKEN", code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestAuditVerifyCommandUsesCheckpointCopies: an attacker who truncates
// the records and deletes the checkpoints in the database too is caught by
// the checkpoints the log shipper kept (the service's log lines), and an
// NDJSON export verifies against them as the database does.
func TestAuditVerifyCommandUsesCheckpointCopies(t *testing.T) {
	dir := t.TempDir()
	db, pub, logLines := auditFixture(t, dir)
	logFile := filepath.Join(dir, "service.log")
	// The shipped log holds other lines too.
	if err := os.WriteFile(logFile, append([]byte("{\"level\":\"info\",\"msg\":\"request\"}\nnot json\n"), logLines...), 0o600); err != nil {
		t.Fatal(err)
	}
	exportFile := filepath.Join(dir, "export.ndjson")
	st, closeStore, err := sqlite.OpenReadOnly(sqlite.Path(db), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	recs, err := st.AuditChain(context.Background(), 0, 100)
	closeStore()
	if err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	for _, r := range recs[:10] { // an export missing the last two records
		if err := json.NewEncoder(&export).Encode(auditjson.FromRecord(r)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(exportFile, export.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	sqlitetest.DeleteRecords(t, db, 9, 12)
	sqlitetest.DeleteCheckpoints(t, db, 9)
	if code, out := runCLI(t, "audit", "verify", "--db", db, "--public-key", pub); code != 0 {
		t.Fatalf("with the database's checkpoints alone the truncation cannot show; exit %d:\n%s", code, out)
	}
	code, out := runCLI(t, "audit", "verify", "--db", db, "--checkpoints", logFile, "--public-key", pub)
	if code != 1 || !strings.Contains(out, "truncated") {
		t.Errorf("with the log's checkpoints: exit %d, want 1 naming the truncation:\n%s", code, out)
	}
	code, out = runCLI(t, "audit", "verify", "--export", exportFile, "--checkpoints", logFile, "--public-key", pub)
	if code != 1 || !strings.Contains(out, "truncated") || !strings.Contains(out, "seq 11-12") {
		t.Errorf("export with the log's checkpoints: exit %d, want 1 naming records 11-12 truncated:\n%s", code, out)
	}
	if code, out := runCLI(t, "audit", "verify", "--db", db, "--checkpoints", logFile); code != exitUsage {
		t.Errorf("without a public key: exit %d, want %d:\n%s", code, exitUsage, out)
	}
}

// TestAuditPublicKeyCommand prints the key checkpoints verify under.
func TestAuditPublicKeyCommand(t *testing.T) {
	dir := t.TempDir()
	_, pubFile, _ := auditFixture(t, dir)
	want, err := os.ReadFile(pubFile)
	if err != nil {
		t.Fatal(err)
	}
	code, out := runCLI(t, "audit", "public-key", "--data-dir", dir)
	if code != 0 || !strings.HasPrefix(out, string(want)) {
		t.Errorf("exit %d, output %q; want the published key %q", code, out, want)
	}
	if code, out := runCLI(t, "audit", "public-key", "--data-dir", t.TempDir()); code != exitFailure || !strings.Contains(out, "no signing key") {
		t.Errorf("without a key: exit %d, %q", code, out)
	}
}

// TestAuditVerifyCommandReadsTheAuditLog: in SQLite mode `agentauth audit
// verify --db` reads the records from the audit log beside the database
// (the database's copy may trail it after a crash), and after retention
// verifies the kept chain from the signed checkpoint at the cut.
func TestAuditVerifyCommandReadsTheAuditLog(t *testing.T) {
	// retain cuts at the checkpoint of 10 (the newest at or before 11).
	retain := func(t *testing.T, dir string, dur *auditlog.Durable, st *sqlite.Store) {
		r := auditlog.Retention{Keep: time.Hour, ArchiveDir: filepath.Join(dir, "audit", "archive"), Archive: true,
			Anchor: func(ctx context.Context, seq int64) (domain.AuditCheckpoint, bool, error) {
				return st.NewestCheckpointThrough(ctx, min(seq, 11))
			},
			After: func(context.Context, int64) (domain.AuditCheckpoint, bool, error) {
				return domain.AuditCheckpoint{}, false, nil
			}}
		if cut, err := dur.Retain(context.Background(), r, time.Now().Add(2*time.Hour)); err != nil || cut.Seq != 10 {
			t.Fatalf("Retain = %+v, %v; want the cut at 10", cut, err)
		}
	}
	none := func(*testing.T, string, *auditlog.Durable, *sqlite.Store) {}
	tests := []struct {
		name    string
		running func(t *testing.T, dir string, dur *auditlog.Durable, st *sqlite.Store) // while the log is open
		stopped func(t *testing.T, dir string)                                          // after the service stopped
		want    string
		checked string
	}{
		{"untouched", none, func(*testing.T, string) {}, "OK: the chain holds", "records checked: 12"},
		{"index emptied", none, func(t *testing.T, dir string) {
			sqlitetest.EmptyAuditIndex(t, filepath.Join(dir, "agentauth.db"))
		}, "OK: the chain holds", "records checked: 12"},
		{"retention cut at the checkpoint of 10", retain, func(*testing.T, string) {}, "OK: the chain holds", "records checked: 2"},
		{"cut moved off its checkpoint", retain, func(t *testing.T, dir string) {
			cut := []byte(`{"seq":11,"hash":"` + strings.Repeat("0", 64) + `"}`)
			if err := os.WriteFile(filepath.Join(dir, "audit", "CUT"), cut, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "BROKEN", "checkpoint_missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			st, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(dir, "agentauth.db")), zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			dur, closeLog, err := auditlog.OpenDurable(filepath.Join(dir, "audit"), st, auditlog.Retention{}, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			signer, closeSigner, err := auditsign.New(st, auditsign.Settings{DataDir: dir, Every: 5, Interval: time.Hour, Out: &bytes.Buffer{}}, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			for i := range 12 {
				rec := []domain.AuditRecord{{Time: time.Now(), RequestID: "r" + string(rune('a'+i)), Subject: "uma", Method: "GET",
					Path: "/api/v2/sessions", Decision: domain.AuditAllow, Reason: "role USER grants sessions:read", Status: 200}}
				if err := dur.AppendAudit(context.Background(), rec); err != nil {
					t.Fatal(err)
				}
				signer.Observe(rec[0].Seq, rec[0].Hash)
				if i == 9 {
					closeSigner() // a checkpoint at 10
					if signer, closeSigner, err = auditsign.New(st, auditsign.Settings{DataDir: dir, Every: 5, Interval: time.Hour, Out: &bytes.Buffer{}}, zap.NewNop()); err != nil {
						t.Fatal(err)
					}
				}
			}
			closeSigner() // and one at 12
			tt.running(t, dir, dur, st)
			closeLog()
			closeStore()
			tt.stopped(t, dir)
			code, out := runCLI(t, "audit", "verify", "--db", filepath.Join(dir, "agentauth.db"), "--public-key", auditsign.PublicKeyPath(dir))
			wantCode := 0
			if tt.want == "BROKEN" {
				wantCode = 1
			}
			if code != wantCode || !strings.Contains(out, tt.want) || !strings.Contains(out, tt.checked) {
				t.Errorf("exit %d, output:\n%s\nwant %d, %q and %q", code, out, wantCode, tt.want, tt.checked)
			}
		})
	}
}

// TestAuditVerifyCommandAfterPostgresRetention: `agentauth audit verify
// --postgres` verifies the kept chain from the retention cut the database
// records, which must be a signed checkpoint.
func TestAuditVerifyCommandAfterPostgresRetention(t *testing.T) {
	tests := []struct {
		name    string
		tamper  string // SQL run after retention
		want    string
		checked string
	}{
		{"the cut at its checkpoint", "", "OK: the chain holds", "records checked: 2"},
		{"the cut moved off its checkpoint", `UPDATE audit_cut SET seq = 11`, "BROKEN", "checkpoint_missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			url := pgtest.URL(t)
			st, closeStore, err := postgres.Open(ctx, postgres.URL(url), zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			defer closeStore()
			_, key, _ := ed25519.GenerateKey(nil)
			pub := filepath.Join(t.TempDir(), "audit.pub")
			if err := os.WriteFile(pub, []byte(auditsign.FormatPublicKey(key.Public().(ed25519.PublicKey))), 0o600); err != nil {
				t.Fatal(err)
			}
			// 12 records a day old, checkpoints at 5 and 10.
			for i := range 12 {
				rec := []domain.AuditRecord{{Time: time.Now().Add(-24 * time.Hour), RequestID: "r", Subject: "uma", Method: "GET",
					Path: "/api/v2/sessions", Decision: domain.AuditAllow, Reason: "role USER grants sessions:read", Status: 200}}
				if err := st.AppendAudit(ctx, rec); err != nil {
					t.Fatal(err)
				}
				if i == 4 || i == 9 {
					_, _, err := st.AppendCheckpoint(ctx, func(last *domain.AuditCheckpoint) (domain.AuditCheckpoint, bool) {
						cp := domain.AuditCheckpoint{Seq: rec[0].Seq, Hash: rec[0].Hash, Time: time.Now()}
						if last != nil {
							cp.Prev = last.Digest()
						}
						cp.Sign(key)
						return cp, true
					})
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			got, err := st.RetainAudit(ctx, postgres.AuditRetention{Keep: time.Hour}, time.Now())
			if err != nil || got.Cut.Next != 11 {
				t.Fatalf("RetainAudit = %+v, %v; want the cut at 10", got, err)
			}
			if tt.tamper != "" {
				conn, err := pgx.Connect(ctx, url)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(ctx)
				if _, err := conn.Exec(ctx, tt.tamper); err != nil {
					t.Fatal(err)
				}
			}
			code, out := runCLI(t, "audit", "verify", "--postgres", url, "--public-key", pub)
			wantCode := 0
			if tt.want == "BROKEN" {
				wantCode = 1
			}
			if code != wantCode || !strings.Contains(out, tt.want) || !strings.Contains(out, tt.checked) {
				t.Errorf("exit %d, output:\n%s\nwant %d, %q and %q", code, out, wantCode, tt.want, tt.checked)
			}
		})
	}
}

// TestAuditPublicKeyFromTheEnvironment: the key given as
// SERVICE_AUDIT_SIGNING_KEY (a Kubernetes secretKeyRef) is printed, with
// no key file in the data folder.
func TestAuditPublicKeyFromTheEnvironment(t *testing.T) {
	const seed = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
	key, err := auditsign.ParseSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	want := auditsign.FormatPublicKey(key.Public().(ed25519.PublicKey))
	var stdout, stderr bytes.Buffer
	code := run([]string{"audit", "public-key", "--data-dir", t.TempDir()}, map[string]string{"SERVICE_AUDIT_SIGNING_KEY": seed}, &stdout, &stderr)
	if code != exitOK || strings.TrimSpace(stdout.String()) != want || !strings.Contains(stderr.String(), "SERVICE_AUDIT_SIGNING_KEY") {
		t.Errorf("exit %d, stdout %q, stderr %q; want %s from SERVICE_AUDIT_SIGNING_KEY", code, stdout.String(), stderr.String(), want)
	}
}

// TestAuditPublicKeyOfAServiceGivenItsKeyInTheEnvironment: a service
// started with SERVICE_AUDIT_SIGNING_KEY keeps no key file, only the public
// key it published in its data folder; `audit public-key --data-dir`,
// run without the secret, prints that key.
func TestAuditPublicKeyOfAServiceGivenItsKeyInTheEnvironment(t *testing.T) {
	const seed = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
	dir := t.TempDir()
	st, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(dir, "agentauth.db")), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	signer, closeSigner, err := auditsign.New(st, auditsign.Settings{Key: seed, DataDir: dir, Every: 10, Interval: time.Hour, Out: &bytes.Buffer{}}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	want := auditsign.FormatPublicKey(signer.PublicKey())
	closeSigner()
	closeStore()
	var stdout, stderr bytes.Buffer
	code := run([]string{"audit", "public-key", "--data-dir", dir}, map[string]string{}, &stdout, &stderr)
	if code != exitOK || strings.TrimSpace(stdout.String()) != want || !strings.Contains(stderr.String(), auditsign.PublicKeyPath(dir)) {
		t.Errorf("exit %d, stdout %q, stderr %q; want %s from %s", code, stdout.String(), stderr.String(), want, auditsign.PublicKeyPath(dir))
	}
}
