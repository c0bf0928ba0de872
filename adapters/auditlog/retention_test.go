package auditlog_test

import (
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentauth/agentauth/adapters/auditarchive"
	"github.com/agentauth/agentauth/adapters/auditjson"
	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
)

// readArchive reads an archive's records back.
func readArchive(t *testing.T, path string) []domain.AuditRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []domain.AuditRecord
	if err := auditjson.ReadRecords(zr, func(r domain.AuditRecord) error { out = append(out, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRetentionArchivesOldRecordsAndTheKeptChainVerifiesFromTheCheckpoint(t *testing.T) {
	for _, archive := range []bool{true, false} {
		name := map[bool]string{true: "archive", false: "drop"}[archive]
		t.Run(name, func(t *testing.T) {
			d := dataDir(t.TempDir())
			_, dur, closeAll := d.open(t)
			now := time.Now()
			var recs []domain.AuditRecord
			for i := range 400 {
				r := record(i)
				r.Time = now.Add(-100 * 24 * time.Hour).Add(time.Duration(i) * time.Second)
				if i >= 300 {
					r.Time = now.Add(-time.Hour).Add(time.Duration(i) * time.Second)
				}
				recs = append(recs, r)
			}
			if err := dur.AppendAudit(context.Background(), recs); err != nil {
				t.Fatal(err)
			}
			all := chain(t, dur, 400)
			// The newest signed checkpoint among the old records is at 250:
			// the cut is made there, 251..300 wait for the next one.
			_, key, _ := ed25519.GenerateKey(nil)
			cp := domain.AuditCheckpoint{Seq: 250, Hash: all[249].Hash, Time: now}
			cp.Sign(key)
			anchor := func(_ context.Context, seq int64) (domain.AuditCheckpoint, bool, error) {
				if seq != 300 {
					t.Errorf("anchor asked for seq %d, want 300 (the newest record past retention)", seq)
				}
				return cp, true, nil
			}
			archiveDir := filepath.Join(d.log(), "archive")
			r := auditlog.Retention{Keep: 90 * 24 * time.Hour, Archive: archive, ArchiveDir: archiveDir, Anchor: anchor}
			cut, err := dur.Retain(context.Background(), r, now)
			if err != nil {
				t.Fatal(err)
			}
			if cut.Seq != 250 || cut.Hash != cp.Hash {
				t.Fatalf("cut = %+v, want seq 250 at the checkpoint", cut)
			}
			verifyKept := func(want int) {
				t.Helper()
				kept, err := dur.AuditChain(context.Background(), 0, 1<<30)
				if err != nil {
					t.Fatal(err)
				}
				if len(kept) != want || kept[0].Seq != 251 {
					t.Fatalf("kept %d records from %d, want %d from 251", len(kept), kept[0].Seq, want)
				}
				start, err := dur.ChainStart(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				v := domain.NewChainVerifier(start, []domain.AuditCheckpoint{cp}, 10)
				for _, r := range kept {
					v.Add(r)
				}
				if rep := v.Finish(true); !rep.OK() {
					t.Fatalf("kept chain: %+v", rep.Breaks)
				}
				rep, err := app.NewAudit(dur).VerifyStep(context.Background(), app.VerifyRequest{HasFrom: true})
				if err != nil || !rep.OK() || rep.Checked != int64(want) {
					t.Fatalf("app verify after retention: %+v, %v", rep, err)
				}
			}
			verifyKept(150)

			file := filepath.Join(archiveDir, auditarchive.Name(1, 250))
			if !archive {
				if _, err := os.Stat(archiveDir); !os.IsNotExist(err) {
					t.Errorf("drop mode wrote an archive folder (%v)", err)
				}
			} else {
				st, err := os.Stat(file)
				if err != nil {
					t.Fatal(err)
				}
				if st.Mode().Perm() != 0o600 {
					t.Errorf("archive mode %v, want 0600", st.Mode().Perm())
				}
				old := readArchive(t, file)
				if len(old) != 250 {
					t.Fatalf("archive holds %d records, want 250", len(old))
				}
				v := domain.NewChainVerifier(domain.Genesis, []domain.AuditCheckpoint{cp}, 10)
				for _, r := range old {
					v.Add(r)
				}
				if rep := v.Finish(true); !rep.OK() || rep.HeadHash != cp.Hash {
					t.Fatalf("archive chain: %+v (head %s, checkpoint %s)", rep.Breaks, rep.HeadHash, cp.Hash)
				}
			}

			// The cut holds across a restart and an index rebuilt from the log.
			closeAll()
			d.exec(t, `DELETE FROM audit`)
			_, dur, closeAll = d.open(t)
			defer closeAll()
			verifyKept(150)
			if err := dur.AppendAudit(context.Background(), []domain.AuditRecord{record(400)}); err != nil {
				t.Fatal(err)
			}
			verifyKept(151)
		})
	}
}

// A crash after the cut was written and before the records were removed:
// the next start finishes the removal, and the kept chain verifies.
func TestRetentionInterruptedAfterTheCutIsFinishedAtStart(t *testing.T) {
	d := dataDir(t.TempDir())
	_, dur, closeAll := d.open(t)
	recs := make([]domain.AuditRecord, 30)
	for i := range recs {
		recs[i] = record(i)
	}
	if err := dur.AppendAudit(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	all := chain(t, dur, 30)
	closeAll()
	// What Retain writes first; the crash comes before anything is removed.
	cut := `{"seq":20,"hash":"` + all[19].Hash + `"}`
	if err := os.WriteFile(filepath.Join(d.log(), "CUT"), []byte(cut), 0o600); err != nil {
		t.Fatal(err)
	}
	_, dur, closeAll = d.open(t)
	defer closeAll()
	kept, err := dur.AuditChain(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 10 || kept[0].Seq != 21 {
		t.Fatalf("kept %d records from seq %d, want 10 from 21", len(kept), kept[0].Seq)
	}
	rep, err := app.NewAudit(dur).VerifyStep(context.Background(), app.VerifyRequest{HasFrom: true})
	if err != nil || !rep.OK() || rep.Checked != 10 {
		t.Fatalf("verify after the finished cut: %+v, %v", rep, err)
	}
}
