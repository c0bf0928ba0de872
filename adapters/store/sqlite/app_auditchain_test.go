package sqlite_test

import (
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/adapters/store/sqlite/sqlitetest"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
)

var (
	chainKey = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	otherKey = ed25519.NewKeyFromSeed(append(make([]byte, ed25519.SeedSize-1), 1))
)

// chainStore writes n records into a SQLite database and a checkpoint
// after every every-th record, then lets tamper change the checkpoint
// list (as one with write access to the database would) before they are
// stored; it returns the database's path with the store closed.
func chainStore(t *testing.T, n, every int64, tamper func([]domain.AuditCheckpoint) []domain.AuditCheckpoint) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	st, closeStore, err := sqlite.Open(sqlite.Path(path), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	recs := make([]domain.AuditRecord, n)
	for i := range recs {
		recs[i] = domain.AuditRecord{Subject: "s", Decision: domain.AuditAllow, Status: 200, Time: time.Unix(1_800_000_000+int64(i), 0)}
	}
	if err := st.AppendAudit(t.Context(), recs); err != nil {
		t.Fatal(err)
	}
	var cps []domain.AuditCheckpoint
	for _, r := range recs {
		if r.Seq%every != 0 {
			continue
		}
		cp := domain.AuditCheckpoint{Seq: r.Seq, Hash: r.Hash, Time: r.Time}
		if len(cps) > 0 {
			cp.Prev = cps[len(cps)-1].Digest()
		}
		cp.Sign(chainKey)
		cps = append(cps, cp)
	}
	if tamper != nil {
		cps = tamper(cps)
	}
	for _, cp := range cps {
		if _, _, err := st.AppendCheckpoint(t.Context(), func(*domain.AuditCheckpoint) (domain.AuditCheckpoint, bool) { return cp, true }); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// openChain serves the chain at path for verification under chainKey.
func openChain(t *testing.T, path string) *app.Audit {
	t.Helper()
	st, closeStore, err := sqlite.OpenReadOnly(sqlite.Path(path), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeStore)
	return app.NewAudit(st).WithCheckpoints(st, chainKey.Public().(ed25519.PublicKey))
}

// walk verifies the chain through VerifyStep, limit records a step from
// the first, and returns every break (kind@seq, or kind@seq-last for a
// range) and how many steps it took.
func walk(t *testing.T, a *app.Audit, limit int) ([]string, int) {
	t.Helper()
	var (
		breaks []string
		req    = app.VerifyRequest{HasFrom: true, Limit: limit}
	)
	for steps := 1; ; steps++ {
		if steps > 1000 {
			t.Fatalf("limit %d: the walk does not end", limit)
		}
		step, err := a.VerifyStep(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if step.Checked > int64(limit) {
			t.Fatalf("limit %d: a step checked %d records", limit, step.Checked)
		}
		breaks = append(breaks, breakNames(step.Breaks)...)
		if step.Next == 0 {
			return breaks, steps
		}
		if step.Next <= req.From {
			t.Fatalf("limit %d: step from %d continues at %d", limit, req.From, step.Next)
		}
		req.From = step.Next
	}
}

func breakNames(breaks []domain.ChainBreak) []string {
	out := make([]string, len(breaks))
	for i, b := range breaks {
		out[i] = fmt.Sprintf("%s@%d", b.Kind, b.Seq)
		if b.Last != b.Seq {
			out[i] += fmt.Sprintf("-%d", b.Last)
		}
	}
	return out
}

// TestVerifyWalkChecksEveryCheckpointLinkOnce: a checkpoint deleted or
// forged (another key's signature fails the same way), wherever it falls
// against the steps' bounds (each checkpoint in turn, walked in steps of
// 1, 2, 4, 5 and 23 records), is reported by a walk of the whole chain through the
// API's bounded steps, each break exactly once: every step checks the
// links of the checkpoints in its range, the first one's to the
// checkpoint before the range included.
func TestVerifyWalkChecksEveryCheckpointLinkOnce(t *testing.T) {
	const n, every = walkRecords, walkEvery
	type tamper struct {
		name   string
		change func(cps []domain.AuditCheckpoint, i int) []domain.AuditCheckpoint
		want   func(seq int64) []string // the breaks, tampering with the checkpoint at seq
	}
	tampers := []tamper{
		{"deleted", func(cps []domain.AuditCheckpoint, i int) []domain.AuditCheckpoint { return slices.Delete(cps, i, i+1) },
			func(seq int64) []string {
				if seq == lastCheckpoint {
					return nil // nothing links to the latest: only the copies outside the database tell
				}
				return []string{fmt.Sprintf("checkpoint_missing@%d", seq+every)}
			}},
		{"forged", func(cps []domain.AuditCheckpoint, i int) []domain.AuditCheckpoint {
			cps[i].Hash = cps[(i+1)%len(cps)].Hash // another record's, signature kept
			return cps
		}, forgedBreaks},
	}
	untouched := chainStore(t, n, every, nil)
	for _, limit := range walkLimits {
		if got, _ := walk(t, openChain(t, untouched), limit); len(got) > 0 {
			t.Errorf("untouched, limit %d: breaks %v, want none", limit, got)
		}
	}
	for _, tm := range tampers {
		for seq := int64(every); seq <= n; seq += every {
			t.Run(fmt.Sprintf("%s %d", tm.name, seq), func(t *testing.T) {
				path := chainStore(t, n, every, func(cps []domain.AuditCheckpoint) []domain.AuditCheckpoint { return tm.change(cps, int(seq/every-1)) })
				want, a := tm.want(seq), openChain(t, path)
				for _, limit := range walkLimits {
					if got, _ := walk(t, a, limit); !slices.Equal(got, want) {
						t.Errorf("limit %d: breaks %v, want %v", limit, got, want)
					}
				}
			})
		}
	}
}

// The chain the walks verify: checkpoints at 3, 6, ..., 21 of 23 records.
const walkRecords, walkEvery, lastCheckpoint = 23, 3, 21

// walkLimits put step bounds at every place against a checkpoint (before,
// at, after), and walk in one step.
var walkLimits = []int{1, 2, 4, 5, walkRecords}

// forgedBreaks: a checkpoint whose signature does not hold, and the next
// one's link to it (its digest changed).
func forgedBreaks(seq int64) []string {
	want := []string{fmt.Sprintf("checkpoint_invalid@%d", seq)}
	if seq < lastCheckpoint {
		want = append(want, fmt.Sprintf("checkpoint_missing@%d", seq+walkEvery))
	}
	return want
}

// TestVerifyDefaultChecksTheLinkIntoTheLatest: the default step starts at
// the latest checkpoint; the checkpoint before it deleted or replaced shows
// there, by the latest one's link.
func TestVerifyDefaultChecksTheLinkIntoTheLatest(t *testing.T) {
	tests := []struct {
		name   string
		tamper func([]domain.AuditCheckpoint) []domain.AuditCheckpoint
		want   []string
	}{
		{"untouched", nil, nil},
		{"the one before deleted", func(cps []domain.AuditCheckpoint) []domain.AuditCheckpoint { return slices.Delete(cps, 5, 6) },
			[]string{fmt.Sprintf("checkpoint_missing@%d", lastCheckpoint)}},
		{"the one before re-signed with another key", func(cps []domain.AuditCheckpoint) []domain.AuditCheckpoint {
			cps[5].Sign(otherKey)
			return cps
		}, []string{fmt.Sprintf("checkpoint_missing@%d", lastCheckpoint)}},
		{"the latest forged", func(cps []domain.AuditCheckpoint) []domain.AuditCheckpoint {
			cps[6].Hash = cps[0].Hash
			return cps
		}, []string{fmt.Sprintf("checkpoint_invalid@%d", lastCheckpoint)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step, err := openChain(t, chainStore(t, walkRecords, walkEvery, tt.tamper)).VerifyStep(t.Context(), app.VerifyRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if got := breakNames(step.Breaks); !slices.Equal(got, tt.want) || step.From != lastCheckpoint || step.Next != 0 {
				t.Errorf("default step from %d, next %d, breaks %v; want from %d to the head, breaks %v", step.From, step.Next, got, lastCheckpoint, tt.want)
			}
		})
	}
}

// TestVerifyWalkThroughGapsIsBounded: with a checkpoint at every record,
// records deleted in the middle and at the tail put more checkpoints in
// one gap than a step may read; the walk still ends, every step within
// its bound, and reports the gaps (in pieces at step bounds) exactly:
// nothing missing, nothing twice.
func TestVerifyWalkThroughGapsIsBounded(t *testing.T) {
	path := chainStore(t, 40, 1, nil)
	sqlitetest.DeleteRecords(t, path, 10, 30)
	sqlitetest.DeleteRecords(t, path, 36, 40)
	a := openChain(t, path)
	for _, limit := range []int{1, 2, 3, 5, 8, 40} {
		got, steps := walk(t, a, limit)
		if merged := mergeRanges(t, got); !slices.Equal(merged, []string{"deleted@10-30", "truncated@36-40"}) {
			t.Errorf("limit %d: breaks %v (merged %v), want the records 10 to 30 deleted and 36 to 40 truncated", limit, got, merged)
		}
		if min := (40 + limit - 1) / limit; steps < min {
			t.Errorf("limit %d: %d steps, want at least %d (a step reads at most limit checkpoints)", limit, steps, min)
		}
	}
	// A step from a record that is missing reports what is missing after
	// it and checks no more records than asked.
	sparse := chainStore(t, 40, 10, nil)
	sqlitetest.DeleteRecords(t, sparse, 10, 20)
	step, err := openChain(t, sparse).VerifyStep(t.Context(), app.VerifyRequest{From: 15, HasFrom: true, Limit: 3})
	if got := breakNames(step.Breaks); err != nil || step.Checked != 3 || step.Next != 23 || !slices.Equal(got, []string{"deleted@16-20"}) {
		t.Errorf("from a missing record: checked %d, next %d, breaks %v, %v; want 21 to 23 checked, 16 to 20 deleted", step.Checked, step.Next, got, err)
	}
}

// mergeRanges joins breaks of one kind whose ranges follow each other,
// failing on any overlap.
func mergeRanges(t *testing.T, breaks []string) []string {
	t.Helper()
	var (
		out        []string
		kind       string
		first, end int64
	)
	flush := func() {
		if kind != "" {
			out = append(out, fmt.Sprintf("%s@%d-%d", kind, first, end))
		}
	}
	for _, b := range breaks {
		k, rng, _ := strings.Cut(b, "@")
		var s, e int64
		if n, _ := fmt.Sscanf(rng, "%d-%d", &s, &e); n == 1 {
			e = s
		}
		switch {
		case k == kind && s == end+1:
			end = e
		case k == kind && s <= end:
			t.Fatalf("breaks overlap: %v", breaks)
		default:
			flush()
			kind, first, end = k, s, e
		}
	}
	flush()
	return out
}
