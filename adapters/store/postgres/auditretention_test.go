package postgres_test

import (
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentauth/agentauth/adapters/auditarchive"
	"github.com/agentauth/agentauth/adapters/auditjson"
	"github.com/agentauth/agentauth/adapters/store/postgres"
	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
)

const day = 24 * time.Hour

// retentionFixture is a chain of 400 records in a new schema: 1..300 are
// 100 days old, 301..400 an hour old; checkpoints are signed at 100 and
// 250 and, when atHead, at 400. Retention of 90 days cuts at 250.
type retentionFixture struct {
	url string
	st  *postgres.Store
	key ed25519.PrivateKey
	all []domain.AuditRecord // as written
	now time.Time
}

func newRetentionFixture(t *testing.T, atHead bool) *retentionFixture {
	t.Helper()
	f := &retentionFixture{url: pgtest.URL(t), now: time.Now()}
	f.st = open(t, f.url)
	_, f.key, _ = ed25519.GenerateKey(nil)
	for i := range 400 {
		age := 100 * day
		if i >= 300 {
			age = time.Hour
		}
		r := domain.AuditRecord{Time: f.now.Add(-age).Add(time.Duration(i) * time.Millisecond), RequestID: "r", Subject: "uma",
			Method: "GET", Path: "/api/v2/sessions", Decision: domain.AuditAllow, Reason: "role USER grants sessions:read", Status: 200}
		f.append(t, r)
		if seq := int64(len(f.all)); seq == 100 || seq == 250 || (atHead && seq == 400) {
			f.checkpoint(t, seq)
		}
	}
	return f
}

func (f *retentionFixture) append(t *testing.T, r domain.AuditRecord) {
	t.Helper()
	recs := []domain.AuditRecord{r}
	if err := f.st.AppendAudit(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	f.all = append(f.all, recs[0])
}

// checkpoint signs the checkpoint of record seq, linked to the last one.
func (f *retentionFixture) checkpoint(t *testing.T, seq int64) domain.AuditCheckpoint {
	t.Helper()
	cp, _, err := f.st.AppendCheckpoint(context.Background(), func(last *domain.AuditCheckpoint) (domain.AuditCheckpoint, bool) {
		cp := domain.AuditCheckpoint{Seq: seq, Hash: f.all[seq-1].Hash, Time: time.Now()}
		if last != nil {
			cp.Prev = last.Digest()
		}
		cp.Sign(f.key)
		return cp, true
	})
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func (f *retentionFixture) checkpoints(t *testing.T) []domain.AuditCheckpoint {
	t.Helper()
	cps, err := f.st.Checkpoints(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	return cps
}

func (f *retentionFixture) keys() map[string]ed25519.PublicKey {
	return app.KeySet(f.key.Public().(ed25519.PublicKey))
}

func (f *retentionFixture) retain(t *testing.T, st *postgres.Store, archiveDir string) postgres.Retained {
	t.Helper()
	got, err := st.RetainAudit(context.Background(), postgres.AuditRetention{Keep: 90 * day, ArchiveDir: archiveDir}, f.now)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// verifyKept checks that the database holds records 251..want+250 and
// that they verify: through the API's path (app.Audit.VerifyStep, from the
// first record kept, from the latest checkpoint, and from a record that
// retention removed) and offline (app.VerifyAll, as the CLI does).
func (f *retentionFixture) verifyKept(t *testing.T, want int) {
	t.Helper()
	ctx := context.Background()
	kept, err := f.st.AuditChain(ctx, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != want || kept[0].Seq != 251 {
		t.Fatalf("the database holds %d records from seq %d, want %d from 251", len(kept), kept[0].Seq, want)
	}
	start, err := f.st.ChainStart(ctx)
	if err != nil || start != (domain.ChainStart{Next: 251, Prev: f.all[249].Hash}) {
		t.Fatalf("ChainStart = %+v, %v; want 251 after the hash of 250", start, err)
	}
	audit := app.NewAudit(f.st).WithCheckpoints(f.st, f.key.Public().(ed25519.PublicKey))
	for _, req := range []app.VerifyRequest{{HasFrom: true}, {}, {HasFrom: true, From: 5}, {HasFrom: true, From: 250}} {
		step, err := audit.VerifyStep(ctx, req)
		if err != nil || !step.OK() || step.Next != 0 || step.Checked == 0 && req.HasFrom {
			t.Errorf("VerifyStep(%+v) = checked %d, next %d, breaks %+v, %v; want ok to the head", req, step.Checked, step.Next, step.Breaks, err)
		}
		if req.HasFrom && req.From == 0 && step.Checked != int64(want) {
			t.Errorf("VerifyStep(from 0) checked %d records, want %d", step.Checked, want)
		}
	}
	rep, err := app.VerifyAll(start, func(emit func(domain.AuditRecord) error) error {
		return app.NewAudit(f.st).Export(ctx, start.Next-1, emit)
	}, f.checkpoints(t), f.keys(), nil)
	if err != nil || !rep.OK() || rep.Checked != int64(want) {
		t.Errorf("VerifyAll of the kept chain = %+v, %v; want ok, %d checked", rep, err, want)
	}
}

// each emits recs in order.
func each(recs []domain.AuditRecord) func(emit func(domain.AuditRecord) error) error {
	return func(emit func(domain.AuditRecord) error) error {
		for _, r := range recs {
			if err := emit(r); err != nil {
				return err
			}
		}
		return nil
	}
}

func readArchive(t *testing.T, path string) []domain.AuditRecord {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	zr, err := gzip.NewReader(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []domain.AuditRecord
	if err := auditjson.ReadRecords(zr, func(r domain.AuditRecord) error { out = append(out, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAuditRetentionRemovesOldRecordsAndTheKeptChainVerifies(t *testing.T) {
	tests := []struct {
		name     string
		archive  bool
		atHead   bool  // a checkpoint after the cut; else the cut is at the latest one
		chunk    int64 // records per cut
		archives [][2]int64
	}{
		{"archive", true, true, 0, [][2]int64{{1, 250}}},
		{"archive, the cut at the latest checkpoint", true, false, 0, [][2]int64{{1, 250}}},
		// 1..100 at most 120 records; then no checkpoint within 120
		// records, so the next one, at 250.
		{"archive in chunks", true, true, 120, [][2]int64{{1, 100}, {101, 250}}},
		{"drop", false, true, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRetentionFixture(t, tt.atHead)
			dir := filepath.Join(t.TempDir(), "audit", "archive")
			if !tt.archive {
				dir = ""
			}
			got, err := f.st.RetainAudit(context.Background(), postgres.AuditRetention{Keep: 90 * day, ArchiveDir: dir, Chunk: tt.chunk}, f.now)
			if err != nil {
				t.Fatal(err)
			}
			var wantFiles []string
			for _, a := range tt.archives {
				wantFiles = append(wantFiles, filepath.Join(dir, auditarchive.Name(a[0], a[1])))
			}
			if got.Skipped || got.Removed != 250 || got.Cut.Next != 251 || !slices.Equal(got.Archives, wantFiles) {
				t.Fatalf("RetainAudit = %+v; want 250 removed, the cut at 250, archives %q", got, wantFiles)
			}
			f.verifyKept(t, 150)

			if tt.archive {
				// The archives hold exactly the records removed, and
				// verify offline from the first record to the
				// checkpoint at the cut.
				var old []domain.AuditRecord
				for _, a := range got.Archives {
					old = append(old, readArchive(t, a)...)
				}
				if len(old) != 250 {
					t.Fatalf("the archives hold %d records, want 250", len(old))
				}
				for i, r := range old {
					if w := f.all[i]; r.Seq != w.Seq || r.Hash != w.Hash || r.RequestID != w.RequestID || !r.Time.Equal(w.Time) {
						t.Fatalf("archived record %d = %+v, want %+v", i, r, w)
					}
				}
				rep, err := app.VerifyAll(domain.Genesis, each(old), f.checkpoints(t)[:2], f.keys(), nil)
				if err != nil || !rep.OK() || rep.Checked != 250 || rep.Anchored != 2 || rep.HeadHash != f.all[249].Hash {
					t.Fatalf("offline verify of the archive = %+v, %v; want ok, 250 checked, both checkpoints matched", rep, err)
				}
				// The archive and an export of what is kept are the whole
				// chain again, which verifies against every checkpoint.
				kept, err := f.st.AuditChain(context.Background(), 0, 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				whole := append(old, kept...)
				rep, err = app.VerifyAll(domain.Genesis, each(whole), f.checkpoints(t), f.keys(), nil)
				if err != nil || !rep.OK() || rep.Checked != 400 {
					t.Fatalf("offline verify of the archive and the records kept = %+v, %v; want ok, 400 checked", rep, err)
				}
			}

			// Again: nothing more to remove; then the chain goes on.
			if again := f.retain(t, f.st, dir); again.Removed != 0 || len(again.Archives) != 0 || again.Cut.Next != 251 {
				t.Fatalf("second RetainAudit = %+v; want nothing done", again)
			}
			f.append(t, domain.AuditRecord{Time: time.Now(), RequestID: "after", Subject: "uma", Decision: domain.AuditAllow, Status: 200})
			f.verifyKept(t, 151)
			// The cut is in the database: a store opened afterwards (a
			// restarted or another instance) starts there too.
			f.st = open(t, f.url)
			f.verifyKept(t, 151)
		})
	}
}

// A run stopped after the cut was committed and before every record was
// deleted: the chain verifies from the cut meanwhile, and the next run
// deletes the rest. A run stopped after its archive and before the cut:
// the records are all there, and the next run archives them again.
func TestAuditRetentionInterruptedIsFinishedByTheNextRun(t *testing.T) {
	f := newRetentionFixture(t, true)
	ctx := context.Background()
	dir := t.TempDir()
	// An earlier attempt archived 1..100 (the checkpoint then) and stopped.
	if _, err := auditarchive.Write(dir, 1, 100, each(f.all[:100])); err != nil {
		t.Fatal(err)
	}
	// Then one that committed the cut at 250 and deleted 1..99 only.
	conn, err := pgx.Connect(ctx, f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO audit_cut (id, seq, hash, at, host, archive) VALUES (1, 250, $1, 0, 'h', '')`, f.all[249].Hash); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `DELETE FROM audit WHERE seq < 100`); err != nil {
		t.Fatal(err)
	}
	audit := app.NewAudit(f.st).WithCheckpoints(f.st, f.key.Public().(ed25519.PublicKey))
	if step, err := audit.VerifyStep(ctx, app.VerifyRequest{HasFrom: true}); err != nil || !step.OK() || step.Checked != 150 {
		t.Fatalf("verify while records up to the cut remain = %+v, %v; want ok, 150 checked", step, err)
	}
	// The export starts at the cut too: with the archives, one chain.
	var exported []domain.AuditRecord
	if err := audit.Export(ctx, 0, func(r domain.AuditRecord) error { exported = append(exported, r); return nil }); err != nil ||
		len(exported) != 150 || exported[0].Seq != 251 {
		t.Fatalf("export while records up to the cut remain: %d records from %+v, %v; want 150 from 251", len(exported), exported[:1], err)
	}
	got := f.retain(t, f.st, dir)
	if got.Removed != 151 || got.Cut.Next != 251 || len(got.Archives) != 0 {
		t.Fatalf("RetainAudit = %+v; want the 151 records left up to the cut removed, no new archive", got)
	}
	f.verifyKept(t, 150)

	// A crash between the archive and the cut is like the first attempt
	// above: the rerun writes the whole range, and the shorter archive goes.
	g := newRetentionFixture(t, true)
	gotG := g.retain(t, g.st, dir)
	if gotG.Removed != 250 || !slices.Equal(gotG.Archives, []string{filepath.Join(dir, auditarchive.Name(1, 250))}) {
		t.Fatalf("RetainAudit = %+v; want 250 archived and removed", gotG)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(names) != 1 || len(readArchive(t, names[0])) != 250 {
		t.Fatalf("archive folder holds %v, want the one archive of 1..250", names)
	}
}

// Instances share the database: one at a time applies retention, the
// others skip, and the records are cut and archived once.
func TestAuditRetentionOneInstanceAtATime(t *testing.T) {
	f := newRetentionFixture(t, true)
	ctx := context.Background()

	// While another holds the lock, an instance skips and changes nothing.
	conn, err := pgx.Connect(ctx, f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+postgres.RetentionLock+`)`).Scan(&locked); err != nil || !locked {
		t.Fatalf("take the retention lock: %v, %v", locked, err)
	}
	if got := f.retain(t, f.st, t.TempDir()); !got.Skipped || got.Removed != 0 {
		t.Fatalf("RetainAudit while the lock is held = %+v; want skipped", got)
	}
	if recs, _ := f.st.AuditChain(ctx, 0, 1000); len(recs) != 400 {
		t.Fatalf("%d records left, want all 400", len(recs))
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(`+postgres.RetentionLock+`)`); err != nil {
		t.Fatal(err)
	}

	// Instances racing: one cuts; the others skip or find nothing left.
	const instances = 4
	var (
		wg   sync.WaitGroup
		got  [instances]postgres.Retained
		dirs [instances]string
	)
	for i := range instances {
		st, dir := open(t, f.url), t.TempDir()
		dirs[i] = dir
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = f.retain(t, st, dir)
		}()
	}
	wg.Wait()
	cuts, files := 0, 0
	for i, g := range got {
		if g.Removed > 0 {
			cuts++
			if g.Removed != 250 || len(g.Archives) != 1 {
				t.Errorf("instance %d: %+v; want 250 records removed and archived", i, g)
			}
		} else if len(g.Archives) != 0 {
			t.Errorf("instance %d removed nothing but wrote %v", i, g.Archives)
		}
		names, _ := filepath.Glob(filepath.Join(dirs[i], "*"))
		files += len(names)
	}
	if cuts != 1 || files != 1 {
		t.Fatalf("%d instances cut and %d archive files were written (%+v); want 1 and 1", cuts, files, got)
	}
	f.verifyKept(t, 150)
}
