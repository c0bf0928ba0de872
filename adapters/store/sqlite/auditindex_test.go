package sqlite

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

func openIndex(t *testing.T) *Store {
	t.Helper()
	st, closeStore, err := Open(Path(filepath.Join(t.TempDir(), "a.db")), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeStore)
	return st
}

// run is records from..to as the log would hand them over: 400-byte
// entries, a new segment at every multiple of 7, a second apart; every
// third is denied, subjects alternate.
func run(from, to int64) ([]domain.AuditRecord, []ports.AuditLocation) {
	var (
		recs []domain.AuditRecord
		at   []ports.AuditLocation
	)
	t0 := time.Unix(1_700_000_000, 0)
	for seq := from; seq <= to; seq++ {
		r := domain.AuditRecord{Seq: seq, Time: t0.Add(time.Duration(seq) * time.Second), Subject: []string{"ann", "bob"}[seq%2],
			Decision: domain.AuditAllow, Hash: strings.Repeat("a", 64)}
		if seq%3 == 0 {
			r.Decision = domain.AuditDeny
		}
		recs = append(recs, r)
		at = append(at, ports.AuditLocation{Seq: seq, Segment: uint64(seq/7*7 + 1), Offset: (seq % 7) * 400})
	}
	return recs, at
}

func TestAuditIndexFindsWhatItWasGiven(t *testing.T) {
	st := openIndex(t)
	ctx := context.Background()
	recs, at := run(1, 100)
	for _, cut := range [][2]int{{0, 1}, {1, 40}, {40, 41}, {41, 100}} { // blocks of 1, 39, 1 and 59
		if err := st.IndexAudit(ctx, recs[cut[0]:cut[1]], at[cut[0]:cut[1]]); err != nil {
			t.Fatal(err)
		}
	}
	// want is the brute-force answer over recs.
	want := func(q ports.AuditQuery) []ports.AuditLocation {
		out := []ports.AuditLocation{}
		for i := len(recs) - 1; i >= 0; i-- {
			r := recs[i]
			if q.Subject != "" && r.Subject != q.Subject || q.Decision != "" && r.Decision != q.Decision ||
				q.Before > 0 && r.Seq >= q.Before || !q.Since.IsZero() && r.Time.Before(q.Since) || !q.Until.IsZero() && !r.Time.Before(q.Until) {
				continue
			}
			if q.Limit > 0 && len(out) == q.Limit {
				break
			}
			out = append(out, at[i])
		}
		return out
	}
	t0 := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name string
		q    ports.AuditQuery
	}{
		{"everything", ports.AuditQuery{}},
		{"newest page", ports.AuditQuery{Limit: 10}},
		{"cursor across blocks", ports.AuditQuery{Before: 42, Limit: 5}},
		{"subject", ports.AuditQuery{Subject: "bob", Limit: 30}},
		{"decision", ports.AuditQuery{Decision: domain.AuditDeny}},
		{"subject and decision, cursor", ports.AuditQuery{Subject: "ann", Decision: domain.AuditDeny, Before: 60, Limit: 4}},
		{"time window over three blocks", ports.AuditQuery{Since: t0.Add(39 * time.Second), Until: t0.Add(43 * time.Second)}},
		{"time window and subject", ports.AuditQuery{Subject: "bob", Since: t0.Add(10 * time.Second), Until: t0.Add(90 * time.Second), Limit: 7}},
		{"nobody", ports.AuditQuery{Subject: "carl"}},
		{"after the end", ports.AuditQuery{Since: t0.Add(time.Hour)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := st.FindAudit(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if w := want(tt.q); !slices.Equal(got, w) {
				t.Errorf("FindAudit(%+v)\n got %v\nwant %v", tt.q, got, w)
			}
		})
	}
	t.Run("chain from anywhere", func(t *testing.T) {
		got, err := st.LocateAudit(ctx, 38, 5)
		if err != nil || !slices.Equal(got, at[38:43]) {
			t.Errorf("LocateAudit(38, 5) = %v, %v; want %v", got, err, at[38:43])
		}
	})
	t.Run("retention", func(t *testing.T) {
		if err := st.DeleteAuditThrough(ctx, 45); err != nil {
			t.Fatal(err)
		}
		recs, at = recs[45:], at[45:]
		for _, q := range []ports.AuditQuery{{}, {Subject: "bob"}, {Decision: domain.AuditDeny, Limit: 3}} {
			if got, err := st.FindAudit(ctx, q); err != nil || !slices.Equal(got, want(q)) {
				t.Errorf("after the cut FindAudit(%+v) = %v, %v; want %v", q, got, err, want(q))
			}
		}
		if got, err := st.LocateAudit(ctx, 0, 2); err != nil || !slices.Equal(got, at[:2]) {
			t.Errorf("after the cut LocateAudit(0, 2) = %v, %v; want %v", got, err, at[:2])
		}
	})
}

func TestAuditIndexRefusesWhatIsNotTheNextRunOfTheLog(t *testing.T) {
	st := openIndex(t)
	ctx := context.Background()
	recs, at := run(1, 10)
	if err := st.IndexAudit(ctx, recs[:5], at[:5]); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(r []domain.AuditRecord, a []ports.AuditLocation) ([]domain.AuditRecord, []ports.AuditLocation)
		want string
	}{
		{"a gap after the index", func(r []domain.AuditRecord, a []ports.AuditLocation) ([]domain.AuditRecord, []ports.AuditLocation) {
			return r[1:], a[1:]
		}, "do not follow"},
		{"a gap inside the run", func(r []domain.AuditRecord, a []ports.AuditLocation) ([]domain.AuditRecord, []ports.AuditLocation) {
			return slices.Delete(slices.Clone(r), 2, 3), slices.Delete(slices.Clone(a), 2, 3)
		}, "not one run"},
		{"locations of other records", func(r []domain.AuditRecord, a []ports.AuditLocation) ([]domain.AuditRecord, []ports.AuditLocation) {
			return r, a[1:]
		}, "locations"},
		{"a location going back", func(r []domain.AuditRecord, a []ports.AuditLocation) ([]domain.AuditRecord, []ports.AuditLocation) {
			a = slices.Clone(a)
			a[1].Offset = a[0].Offset
			a[1].Segment = a[0].Segment
			return r, a
		}, "not after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, a := tt.edit(recs[5:], at[5:])
			if err := st.IndexAudit(ctx, r, a); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("IndexAudit = %v, want an error saying %q", err, tt.want)
			}
		})
	}
	if head, _, err := st.AuditIndexHead(ctx); err != nil || head != 5 {
		t.Errorf("head after refused runs = %d, %v; want 5", head, err)
	}
}
