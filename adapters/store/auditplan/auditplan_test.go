package auditplan

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentauth/agentauth/ports"
)

// log is a store's records as seq → time, with gaps (retention, or seqs
// of a failed batch are never reused but may be missing in a test).
type log map[int64]int64

func (l log) probe(_ context.Context, seq int64) (int64, int64, bool, error) {
	var keys []int64
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k >= seq {
			return k, l[k], true, nil
		}
	}
	return 0, 0, false, nil
}

func TestSeqRangeFindsTimeBoundsBySearch(t *testing.T) {
	// seq 10..19 at times 100, 100, 105, … (non-decreasing), then a gap, then 30..31.
	l := log{10: 100, 11: 100, 12: 105, 13: 110, 14: 110, 15: 120, 16: 130, 17: 140, 18: 150, 19: 150, 30: 200, 31: 210}
	at := func(micros int64) time.Time { return time.UnixMicro(micros) }
	tests := []struct {
		name string
		q    ports.AuditQuery
		want Range
	}{
		{"everything", ports.AuditQuery{}, Range{Lo: 10, Hi: 32}},
		{"since an existing time", ports.AuditQuery{Since: at(110)}, Range{Lo: 13, Hi: 32}},
		{"since between times", ports.AuditQuery{Since: at(111)}, Range{Lo: 15, Hi: 32}},
		{"since after the gap", ports.AuditQuery{Since: at(160)}, Range{Lo: 20, Hi: 32}},
		{"until excludes its time", ports.AuditQuery{Until: at(110)}, Range{Lo: 10, Hi: 13}},
		{"window", ports.AuditQuery{Since: at(105), Until: at(150)}, Range{Lo: 12, Hi: 18}},
		{"window and cursor", ports.AuditQuery{Since: at(105), Until: at(150), Before: 15}, Range{Lo: 12, Hi: 15}},
		{"before everything", ports.AuditQuery{Until: at(50)}, Range{Lo: 10, Hi: 10, Empty: true}},
		{"after everything", ports.AuditQuery{Since: at(500)}, Range{Lo: 32, Hi: 32, Empty: true}},
		{"empty window", ports.AuditQuery{Since: at(150), Until: at(150)}, Range{Lo: 18, Hi: 18, Empty: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SeqRange(context.Background(), tt.q, 10, 31, l.probe)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("SeqRange = %+v, want %+v", got, tt.want)
			}
		})
	}
}
