package auditlog_test

import (
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"slices"
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
			after := func(context.Context, int64) (domain.AuditCheckpoint, bool, error) { // none past 250
				return domain.AuditCheckpoint{}, false, nil
			}
			archiveDir := filepath.Join(d.log(), "archive")
			r := auditlog.Retention{Keep: 90 * 24 * time.Hour, Archive: archive, ArchiveDir: archiveDir, Anchor: anchor, After: after}
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

// TestRetentionCutsABacklogInSteps: a backlog longer than a step is cut
// at the checkpoints in between, one archive per step, each verifying from
// the cut before it to its checkpoint; a run stopped after a step keeps it.
func TestRetentionCutsABacklogInSteps(t *testing.T) {
	const step = 10
	every5 := []int64{5, 10, 15, 20, 25, 30, 35, 40, 45, 50}
	tests := []struct {
		name        string
		checkpoints []int64
		archives    [][2]int64
	}{
		{"checkpoints every 5", every5, [][2]int64{{1, 10}, {11, 20}, {21, 30}, {31, 40}}},
		// No checkpoint within a step after 25: the next one, at 37.
		{"checkpoints further apart than a step", []int64{5, 10, 15, 20, 25, 37, 40, 45, 50},
			[][2]int64{{1, 10}, {11, 20}, {21, 25}, {26, 37}, {38, 40}}},
	}
	// 50 records, 1..42 past retention.
	setup := func(t *testing.T, checkpoints []int64) (*auditlog.Durable, auditlog.Retention, []domain.AuditRecord, []domain.AuditCheckpoint, time.Time) {
		auditlog.SetRetentionStep(t, step)
		d := dataDir(t.TempDir())
		st, dur, closeAll := d.open(t)
		t.Cleanup(closeAll)
		now := time.Now()
		recs := make([]domain.AuditRecord, 50)
		for i := range recs {
			recs[i] = record(i)
			recs[i].Time = now.Add(-100 * 24 * time.Hour).Add(time.Duration(i) * time.Second)
			if i >= 42 {
				recs[i].Time = now.Add(-time.Hour).Add(time.Duration(i) * time.Second)
			}
		}
		if err := dur.AppendAudit(context.Background(), recs); err != nil {
			t.Fatal(err)
		}
		all := chain(t, dur, 50)
		_, key, _ := ed25519.GenerateKey(nil)
		var cps []domain.AuditCheckpoint
		for _, seq := range checkpoints {
			cp, _, err := st.AppendCheckpoint(context.Background(), func(last *domain.AuditCheckpoint) (domain.AuditCheckpoint, bool) {
				cp := domain.AuditCheckpoint{Seq: seq, Hash: all[seq-1].Hash, Time: now}
				if last != nil {
					cp.Prev = last.Digest()
				}
				cp.Sign(key)
				return cp, true
			})
			if err != nil {
				t.Fatal(err)
			}
			cps = append(cps, cp)
		}
		r := auditlog.Retention{Keep: 90 * 24 * time.Hour, Archive: true, ArchiveDir: filepath.Join(d.log(), "archive"),
			Anchor: st.NewestCheckpointThrough, After: st.OldestCheckpointAfter}
		return dur, r, all, cps, now
	}
	// check: the archives in the folder are want, each holds its records
	// and verifies from the cut before it to its checkpoint; the kept
	// chain verifies from the cut.
	check := func(t *testing.T, dur *auditlog.Durable, r auditlog.Retention, all []domain.AuditRecord, cps []domain.AuditCheckpoint, want [][2]int64) {
		t.Helper()
		names, _ := filepath.Glob(filepath.Join(r.ArchiveDir, "*"))
		var wantNames []string
		for _, a := range want {
			wantNames = append(wantNames, filepath.Join(r.ArchiveDir, auditarchive.Name(a[0], a[1])))
		}
		slices.Sort(names)
		slices.Sort(wantNames)
		if !slices.Equal(names, wantNames) {
			t.Fatalf("archives %q, want %q", names, wantNames)
		}
		for _, a := range want {
			old := readArchive(t, filepath.Join(r.ArchiveDir, auditarchive.Name(a[0], a[1])))
			start := domain.Genesis
			if a[0] > 1 {
				start = domain.ChainStart{Next: a[0], Prev: all[a[0]-2].Hash}
			}
			// The checkpoints up to the archive's end (later ones cover
			// records it does not hold).
			upTo := slices.DeleteFunc(slices.Clone(cps), func(cp domain.AuditCheckpoint) bool { return cp.Seq > a[1] })
			v := domain.NewChainVerifier(start, upTo, 10)
			for _, r := range old {
				v.Add(r)
			}
			if rep := v.Finish(true); !rep.OK() || rep.Checked != a[1]-a[0]+1 || rep.HeadSeq != a[1] || rep.Anchored == 0 {
				t.Fatalf("archive %d..%d: %+v", a[0], a[1], rep)
			}
		}
		through := want[len(want)-1][1]
		start, err := dur.ChainStart(context.Background())
		if err != nil || start.Next != through+1 || start.Prev != all[through-1].Hash {
			t.Fatalf("ChainStart = %+v, %v; want the cut at %d", start, err, through)
		}
		rep, err := app.NewAudit(dur).VerifyStep(context.Background(), app.VerifyRequest{HasFrom: true})
		if err != nil || !rep.OK() || rep.Checked != 50-through {
			t.Fatalf("verify the kept chain: %+v, %v; want %d records checked", rep, err, 50-through)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dur, r, all, cps, now := setup(t, tt.checkpoints)
			last := tt.archives[len(tt.archives)-1][1]
			cut, err := dur.Retain(context.Background(), r, now)
			if err != nil || cut.Seq != last {
				t.Fatalf("Retain = %+v, %v; want the cut at %d", cut, err, last)
			}
			check(t, dur, r, all, cps, tt.archives)
		})
	}
	t.Run("stopped after the first step", func(t *testing.T) {
		dur, r, all, cps, now := setup(t, every5)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		anchor, calls := r.Anchor, 0
		// The run's time is up when it looks for the second step's checkpoint.
		r.Anchor = func(ctx context.Context, seq int64) (domain.AuditCheckpoint, bool, error) {
			if calls++; calls == 2 {
				cancel()
			}
			return anchor(ctx, seq)
		}
		cut, err := dur.Retain(ctx, r, now)
		if !errors.Is(err, context.Canceled) || cut.Seq != 10 {
			t.Fatalf("Retain = %+v, %v; want the cut at 10 and the context's error", cut, err)
		}
		check(t, dur, r, all, cps, [][2]int64{{1, 10}})
		// The next run goes on from there.
		r.Anchor = anchor
		if cut, err := dur.Retain(context.Background(), r, now); err != nil || cut.Seq != 40 {
			t.Fatalf("second Retain = %+v, %v; want the cut at 40", cut, err)
		}
		check(t, dur, r, all, cps, [][2]int64{{1, 10}, {11, 20}, {21, 30}, {31, 40}})
	})
}
