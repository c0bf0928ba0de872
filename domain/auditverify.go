package domain

import (
	"cmp"
	"crypto/ed25519"
	"fmt"
	"slices"
)

// BreakKind names what a chain break means.
type BreakKind string

// Break kinds. Each names the tampering it is the trace of.
const (
	// BreakEdited: a record's fields do not give its hash (a record was
	// edited after it was written).
	BreakEdited BreakKind = "edited"
	// BreakDeleted: sequence numbers are missing between two records (one
	// or more records were deleted).
	BreakDeleted BreakKind = "deleted"
	// BreakLink: a record's prev_hash is not the previous record's hash
	// (the previous record was rewritten with a recomputed hash, or records
	// were reordered or duplicated).
	BreakLink BreakKind = "link_broken"
	// BreakTruncated: a signed checkpoint covers records beyond the last
	// one present (the tail was deleted).
	BreakTruncated BreakKind = "truncated"
	// BreakRewritten: the record a signed checkpoint covers has another
	// hash than the one signed (records up to it were rewritten and their
	// hashes recomputed).
	BreakRewritten BreakKind = "rewritten"
	// BreakCheckpointInvalid: a checkpoint's signature does not verify
	// under the given keys; it anchors nothing.
	BreakCheckpointInvalid BreakKind = "checkpoint_invalid"
	// BreakCheckpointMissing: a checkpoint's prev is not the previous
	// checkpoint's digest (a checkpoint was deleted or replaced).
	BreakCheckpointMissing BreakKind = "checkpoint_missing"
)

// ChainBreak is one place where the chain does not hold.
type ChainBreak struct {
	Kind BreakKind
	// Seq is the record (or checkpoint) concerned; for deleted and
	// truncated, the first missing record and Last the last one.
	Seq    int64
	Last   int64
	Reason string
}

// ChainStart is where a verification begins: the sequence number of the
// first record expected and the hash its prev_hash must hold ("" when not
// known: a verification that starts mid-chain without an anchor).
type ChainStart struct {
	Next int64
	Prev string
	// Resume: record Next was checked by a previous verification; it is
	// read again only as the anchor of the link to the record after it
	// (when it is missing, the previous verification reported it).
	Resume bool
}

// Genesis starts a verification at the first record ever written.
var Genesis = ChainStart{Next: 1, Prev: GenesisHash}

// ChainReport is the outcome of a verification.
type ChainReport struct {
	Checked  int64  // records read
	HeadSeq  int64  // last record read (0 when none)
	HeadHash string // its hash
	// Anchored is how many signed checkpoints were matched against records.
	Anchored int
	// Breaks holds the first breaks found (at most the verifier's cap);
	// BreakCount counts all of them.
	Breaks     []ChainBreak
	BreakCount int64
}

// OK tells whether no break was found.
func (r ChainReport) OK() bool { return r.BreakCount == 0 }

// ChainVerifier checks records streamed to it in sequence order against
// each other and against signed checkpoints, and keeps every break it
// finds (the first MaxBreaks of them and a count), so memory stays bounded
// however long the chain.
type ChainVerifier struct {
	next      int64
	prev      string
	resume    bool
	anchors   []AuditCheckpoint
	ai        int
	maxBreaks int
	rep       ChainReport
}

// NewChainVerifier starts at start with the checkpoints whose signatures
// were verified (VerifyCheckpoints), keeping at most maxBreaks breaks.
func NewChainVerifier(start ChainStart, anchors []AuditCheckpoint, maxBreaks int) *ChainVerifier {
	anchors = slices.Clone(anchors)
	slices.SortStableFunc(anchors, func(a, b AuditCheckpoint) int { return cmp.Compare(a.Seq, b.Seq) })
	i := 0
	for i < len(anchors) && anchors[i].Seq < start.Next {
		i++
	}
	return &ChainVerifier{next: start.Next, prev: start.Prev, resume: start.Resume, anchors: anchors, ai: i, maxBreaks: maxBreaks,
		rep: ChainReport{HeadHash: start.Prev}}
}

// Report adds a break found elsewhere (a checkpoint's) to the report.
func (v *ChainVerifier) Report(b ChainBreak) {
	if b.Last == 0 {
		b.Last = b.Seq
	}
	v.rep.BreakCount++
	if len(v.rep.Breaks) < v.maxBreaks {
		v.rep.Breaks = append(v.rep.Breaks, b)
	}
}

// Add checks the next record.
func (v *ChainVerifier) Add(r AuditRecord) {
	if v.resume && r.Seq == v.next { // the anchor, checked before
		v.resume = false
		for v.ai < len(v.anchors) && v.anchors[v.ai].Seq <= r.Seq {
			v.ai++
		}
		v.prev, v.next = r.Hash, r.Seq+1
		v.rep.HeadSeq, v.rep.HeadHash = r.Seq, r.Hash
		return
	}
	v.skipMissingAnchor()
	v.rep.Checked++
	linked := v.prev != ""
	switch {
	case r.Seq > v.next:
		v.Report(ChainBreak{Kind: BreakDeleted, Seq: v.next, Last: r.Seq - 1,
			Reason: fmt.Sprintf("records %d to %d are missing: deleted", v.next, r.Seq-1)})
		linked = false // the gap explains the link
	case r.Seq < v.next:
		v.Report(ChainBreak{Kind: BreakLink, Seq: r.Seq,
			Reason: fmt.Sprintf("record %d comes after record %d: reordered or duplicated", r.Seq, v.next-1)})
		linked = false
	}
	if linked && r.PrevHash != v.prev {
		v.Report(ChainBreak{Kind: BreakLink, Seq: r.Seq,
			Reason: fmt.Sprintf("prev_hash is not the hash of record %d: that record was rewritten (hash recomputed) or this link edited", r.Seq-1)})
	}
	if r.ChainHash() != r.Hash {
		v.Report(ChainBreak{Kind: BreakEdited, Seq: r.Seq, Reason: "the record's fields do not give its hash: edited"})
	}
	for v.ai < len(v.anchors) && v.anchors[v.ai].Seq < r.Seq {
		v.ai++ // its record is missing: the gap is reported
	}
	for ; v.ai < len(v.anchors) && v.anchors[v.ai].Seq == r.Seq; v.ai++ {
		v.rep.Anchored++
		if cp := v.anchors[v.ai]; cp.Hash != r.Hash {
			v.Report(ChainBreak{Kind: BreakRewritten, Seq: r.Seq,
				Reason: fmt.Sprintf("the checkpoint signed at %s holds another hash for this record: records up to %d were rewritten",
					cp.Time.Format("2006-01-02T15:04:05Z07:00"), r.Seq)})
		}
	}
	if r.Seq >= v.next {
		v.next = r.Seq + 1
	}
	v.prev = r.Hash
	v.rep.HeadSeq, v.rep.HeadHash = r.Seq, r.Hash
}

// skipMissingAnchor: the record a resumed verification starts after is
// missing; the verification before reported it, so this one reports
// what is missing from the record after it on.
func (v *ChainVerifier) skipMissingAnchor() {
	if v.resume {
		v.resume = false
		v.next++
	}
}

// MissingThrough tells that no record numbered up to seq follows the last
// one added (a later record was read): those not added yet are reported
// deleted, and the verification ends there.
func (v *ChainVerifier) MissingThrough(seq int64) {
	v.skipMissingAnchor()
	if seq >= v.next {
		v.Report(ChainBreak{Kind: BreakDeleted, Seq: v.next, Last: seq,
			Reason: fmt.Sprintf("records %d to %d are missing: deleted", v.next, seq)})
		v.next, v.prev = seq+1, ""
	}
}

// Finish returns the report. atHead tells that the last record added is
// the last one present, so that checkpoints beyond it mean a truncation.
func (v *ChainVerifier) Finish(atHead bool) ChainReport {
	v.skipMissingAnchor()
	if atHead && len(v.anchors) > 0 {
		if last := v.anchors[len(v.anchors)-1]; last.Seq >= v.next {
			v.Report(ChainBreak{Kind: BreakTruncated, Seq: v.next, Last: last.Seq,
				Reason: fmt.Sprintf("a checkpoint covers records up to %d but the chain ends at %d: the tail was deleted", last.Seq, v.next-1)})
		}
	}
	return v.rep
}

// VerifyChain checks records given in increasing Seq order that follow a
// record whose hash is prev (GenesisHash for the first record) and returns
// every break (nil when the chain holds).
func VerifyChain(prev string, records []AuditRecord) []ChainBreak {
	start := ChainStart{Next: 1, Prev: prev}
	if prev != GenesisHash && len(records) > 0 {
		start.Next = records[0].Seq
	}
	v := NewChainVerifier(start, nil, len(records)+1)
	for _, r := range records {
		v.Add(r)
	}
	return v.Finish(false).Breaks
}

// VerifyCheckpoints checks checkpoints given in increasing Seq order: each
// signature under keys, and each Prev against the digest of the checkpoint
// before it. prev is the Prev the first must hold ("" when the list starts
// with the first checkpoint ever); with prevKnown false the first link is
// not checked. It returns the checkpoints whose signatures hold (the only
// ones that may anchor records) and the breaks found.
func VerifyCheckpoints(cps []AuditCheckpoint, keys map[string]ed25519.PublicKey, prev string, prevKnown bool) ([]AuditCheckpoint, []ChainBreak) {
	var (
		valid  []AuditCheckpoint
		breaks []ChainBreak
	)
	for _, cp := range cps {
		if prevKnown && cp.Prev != prev {
			breaks = append(breaks, ChainBreak{Kind: BreakCheckpointMissing, Seq: cp.Seq, Last: cp.Seq,
				Reason: "this checkpoint's prev is not the digest of the checkpoint before it: a checkpoint was deleted or replaced"})
		}
		if err := cp.VerifySignature(keys); err != nil {
			breaks = append(breaks, ChainBreak{Kind: BreakCheckpointInvalid, Seq: cp.Seq, Last: cp.Seq, Reason: err.Error()})
		} else {
			valid = append(valid, cp)
		}
		prev, prevKnown = cp.Digest(), true
	}
	return valid, breaks
}
