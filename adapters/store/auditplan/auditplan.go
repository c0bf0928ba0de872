// Package auditplan maps a query of the audit log onto work that does not
// grow with the log, the same way in both stores:
//
//   - Time never decreases along the chain (the writers raise a record's
//     time to its predecessor's), so since/until become a range of sequence
//     numbers, found by binary search over the primary key: about 25 point
//     reads at 10 M records, no time index to maintain.
//   - Records are read newest first from an index whose order is the
//     sequence number within the filter: (decision, seq) for a decision,
//     (subject, decision, seq) for a subject and decision, the primary key
//     when neither is given. A subject alone reads one branch per decision
//     of that index and merges them, each branch stopping at the page size.
//
// So a request reads at most (page size + 1) rows per branch plus the
// binary search, whatever the log holds.
package auditplan

import (
	"context"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Decisions are the decisions a subject-only query merges.
var Decisions = []domain.AuditDecision{domain.AuditAllow, domain.AuditDeny}

// Probe returns the first record at or after seq: its seq and time in Unix
// microseconds; ok is false when there is none.
type Probe func(ctx context.Context, seq int64) (found, micros int64, ok bool, err error)

// Range is the half-open range [Lo, Hi) of sequence numbers a query may
// match; Empty when none can.
type Range struct {
	Lo, Hi int64
	Empty  bool
}

// SeqRange turns since, until and the cursor of q into a sequence range
// within [first, last], the sequence numbers the store holds.
func SeqRange(ctx context.Context, q ports.AuditQuery, first, last int64, probe Probe) (Range, error) {
	r := Range{Lo: first, Hi: last + 1}
	if q.Before > 0 {
		r.Hi = min(r.Hi, q.Before)
	}
	if !q.Since.IsZero() && r.Lo < r.Hi {
		lo, err := firstAtOrAfter(ctx, q.Since.UnixMicro(), r.Lo, r.Hi, probe)
		if err != nil {
			return r, err
		}
		r.Lo = lo
	}
	if !q.Until.IsZero() && r.Lo < r.Hi {
		hi, err := firstAtOrAfter(ctx, q.Until.UnixMicro(), r.Lo, r.Hi, probe)
		if err != nil {
			return r, err
		}
		r.Hi = hi
	}
	r.Empty = r.Lo >= r.Hi
	return r, nil
}

// firstAtOrAfter is the smallest seq in [lo, hi) whose record's time is at
// least micros, or hi when there is none.
func firstAtOrAfter(ctx context.Context, micros, lo, hi int64, probe Probe) (int64, error) {
	for lo < hi {
		mid := lo + (hi-lo)/2
		seq, t, ok, err := probe(ctx, mid)
		if err != nil {
			return 0, err
		}
		switch {
		case !ok || seq >= hi || t >= micros:
			hi = mid
		default:
			lo = seq + 1
		}
	}
	return lo, nil
}

// Branch is one index scan of a query: equality on Subject (when not
// empty) and Decision (when not empty), newest first within the range.
type Branch struct {
	Subject  string
	Decision domain.AuditDecision
}

// Branches are the scans that together answer q, merged by seq.
func Branches(q ports.AuditQuery) []Branch {
	if q.Subject != "" && q.Decision == "" {
		out := make([]Branch, len(Decisions))
		for i, d := range Decisions {
			out[i] = Branch{Subject: q.Subject, Decision: d}
		}
		return out
	}
	return []Branch{{Subject: q.Subject, Decision: q.Decision}}
}
