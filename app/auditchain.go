package app

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"math"
	"slices"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// chainPage is how many records verification and export read at a time, so
// neither holds the whole log in memory.
const chainPage = 1000

// MaxBreaks caps the breaks a verification lists (it counts them all).
const MaxBreaks = 100

// MaxVerifyRecords bounds the records one GET /api/v2/audit/verify reads:
// a request never does unbounded work; the next call continues.
const MaxVerifyRecords = 10_000

// WithCheckpoints makes verification check the signed checkpoints in
// store under the given public keys.
func (a *Audit) WithCheckpoints(store ports.AuditCheckpointStore, keys ...ed25519.PublicKey) *Audit {
	a.checkpoints, a.keys = store, KeySet(keys...)
	return a
}

// KeySet indexes public keys by their key id.
func KeySet(keys ...ed25519.PublicKey) map[string]ed25519.PublicKey {
	m := make(map[string]ed25519.PublicKey, len(keys))
	for _, k := range keys {
		m[domain.AuditKeyID(k)] = k
	}
	return m
}

// VerifyRequest asks for one bounded verification step.
type VerifyRequest struct {
	// From is where to continue: the Next of a previous step (the last
	// record it checked, read again only to check the link to the one
	// after it), or 0 for the first record ever. With HasFrom false, the
	// step starts at the latest checkpoint (or the first record when there
	// is none).
	From    int64
	HasFrom bool
	Limit   int // records (and checkpoints) to read, clamped to [1, MaxVerifyRecords]
}

// VerifyStep is the outcome of one step.
type VerifyStep struct {
	domain.ChainReport
	From int64 // where the step started
	// Next is the From of the next step (the last record checked, so that
	// its link to the following one is checked too); 0 when the step
	// reached the head.
	Next int64
}

// VerifyStep checks the records from a starting point up to a bounded
// number of them: every link and hash, the checkpoints among them and,
// when it reaches the head, that no checkpoint covers records beyond it.
//
// A step owns the checkpoints numbered after the record it starts after,
// up to the last record it checks (at the head: all the rest): it checks
// each one's signature and its link to the checkpoint before it, the
// first one's to the newest checkpoint before the step included. Steps
// that follow each other by Next own consecutive ranges, so a walk of the
// whole chain checks every checkpoint and every link between them exactly
// once. A step reads at most limit checkpoints: when more than that fall
// in its range (records deleted under them), it ends at the last one read.
func (a *Audit) VerifyStep(ctx context.Context, req VerifyRequest) (VerifyStep, error) {
	limit := req.Limit
	if limit <= 0 || limit > MaxVerifyRecords {
		limit = MaxVerifyRecords
	}
	start, err := a.stepStart(ctx, req)
	if err != nil {
		return VerifyStep{}, err
	}
	// Records after `after` are read; those after `owned` are checked,
	// and the checkpoints after it are this step's.
	after, owned := start.Next-1, start.Next-1
	if start.Resume {
		owned = start.Next
	}
	// end bounds the records checked: when more checkpoints follow than
	// the step may read, it ends at the last one it read.
	anchors, cpBreaks, end, err := a.stepCheckpoints(ctx, start, owned, limit)
	if err != nil {
		return VerifyStep{}, err
	}
	v := domain.NewChainVerifier(start, anchors, MaxBreaks)
	step := VerifyStep{From: start.Next}
	read, atHead, past := 0, false, false
	if start.Resume {
		limit++ // the anchor is read, not checked
	}
	for !atHead && !past && read < limit {
		want := min(chainPage, limit-read)
		recs, err := a.store.AuditChain(ctx, after, want)
		if err != nil {
			return VerifyStep{}, err
		}
		atHead = len(recs) < want
		for _, r := range recs {
			if start.Resume && read == 0 && r.Seq != start.Next {
				limit-- // the anchor is missing: every record read is checked: every record read is checked
			}
			if read == limit {
				atHead = false
				break
			}
			if past = r.Seq > end; past {
				break
			}
			v.Add(r)
			read++
			after = r.Seq
		}
	}
	if !atHead && !past {
		more, err := a.store.AuditChain(ctx, after, 1)
		if err != nil {
			return VerifyStep{}, err
		}
		atHead, past = len(more) == 0, len(more) == 1 && more[0].Seq > end
	}
	switch {
	case past: // no record up to end follows the last one checked
		v.MissingThrough(end)
		step.Next = end
	case atHead && end != math.MaxInt64: // checkpoints beyond end are the next step's
		step.Next = end
	case atHead:
	default:
		end, step.Next = after, after
	}
	for _, b := range cpBreaks {
		if b.Seq <= end {
			v.Report(b)
		}
	}
	step.ChainReport = v.Finish(atHead && !past)
	return step, nil
}

// stepStart is where a step begins: From when given (unless retention
// removed that record), else the latest checkpoint (or the head below it,
// when the tail it covers is gone; unless it is the retention cut, whose
// record is gone), else the first record kept.
func (a *Audit) stepStart(ctx context.Context, req VerifyRequest) (domain.ChainStart, error) {
	first, err := a.chainStart(ctx)
	switch {
	case err != nil:
		return domain.ChainStart{}, err
	case req.HasFrom && req.From >= first.Next:
		return domain.ChainStart{Next: req.From, Resume: true}, nil
	case req.HasFrom || a.checkpoints == nil: // 0, or a record retention removed
		return first, nil
	}
	last, ok, err := a.checkpoints.LastCheckpoint(ctx)
	if err != nil || !ok {
		return first, err
	}
	head, err := a.store.QueryAudit(ctx, ports.AuditQuery{Limit: 1})
	switch {
	case err != nil:
		return domain.ChainStart{}, err
	case len(head) == 0: // every record is gone: from the first
		return first, nil
	case head[0].Seq < last.Seq: // truncated: from the head, to report it
		return domain.ChainStart{Next: head[0].Seq}, nil
	case last.Seq < first.Next: // at the retention cut: its record is gone
		return first, nil
	}
	return domain.ChainStart{Next: last.Seq}, nil
}

// stepCheckpoints reads the checkpoints numbered after owned, at most
// limit, and checks their signatures and links from the newest one up to
// owned. It returns those whose signatures hold (the anchors), the breaks
// found (each at the checkpoint concerned) and where the step must end:
// at the last checkpoint read when more follow, else nowhere
// (math.MaxInt64). A step that starts at a retention cut also checks
// that the cut is a valid checkpoint.
func (a *Audit) stepCheckpoints(ctx context.Context, start domain.ChainStart, owned int64, limit int) (
	anchors []domain.AuditCheckpoint, breaks []domain.ChainBreak, end int64, err error) {
	end = math.MaxInt64
	if a.checkpoints == nil {
		return nil, nil, end, nil
	}
	cps, err := a.checkpoints.Checkpoints(ctx, owned, limit+1)
	if err != nil {
		return nil, nil, 0, err
	}
	if len(cps) > limit {
		cps, end = cps[:limit], cps[limit-1].Seq
	}
	before, ok, err := a.checkpoints.NewestCheckpointThrough(ctx, owned)
	if err != nil {
		return nil, nil, 0, err
	}
	prev := ""
	if ok {
		prev = before.Digest()
	}
	anchors, breaks = domain.VerifyCheckpoints(cps, a.keys, prev, true)
	if isCut(start) {
		var valid []domain.AuditCheckpoint
		if ok && before.VerifySignature(a.keys) == nil {
			valid = append(valid, before)
		}
		if b, bad := cutBreak(start, valid); bad {
			breaks = append(breaks, b)
		}
	}
	return anchors, breaks, end, nil
}

// chainStart is where the chain kept begins: the first record, or the
// record after the retention cut of a store that removed older ones.
func (a *Audit) chainStart(ctx context.Context) (domain.ChainStart, error) {
	if s, ok := a.store.(ports.AuditChainStarter); ok {
		return s.ChainStart(ctx)
	}
	return domain.Genesis, nil
}

// VerifyAll checks a whole chain offline: every record each emits (in
// sequence order, from start: the first record, or the one after a
// retention cut) against each other and against the checkpoints, whose
// signatures and links are checked under keys; a cut must be one of those
// checkpoints. progress, when set, is called every chainPage*100 records.
func VerifyAll(start domain.ChainStart, each func(emit func(domain.AuditRecord) error) error, cps []domain.AuditCheckpoint,
	keys map[string]ed25519.PublicKey, progress func(checked, seq int64)) (domain.ChainReport, error) {
	valid, cpBreaks := domain.VerifyCheckpoints(cps, keys, "", true)
	v := domain.NewChainVerifier(start, valid, MaxBreaks)
	for _, b := range cpBreaks {
		v.Report(b)
	}
	if b, bad := cutBreak(start, valid); isCut(start) && bad {
		v.Report(b)
	}
	var n int64
	err := each(func(r domain.AuditRecord) error {
		v.Add(r)
		if n++; progress != nil && n%(chainPage*100) == 0 {
			progress(n, r.Seq)
		}
		return nil
	})
	if err != nil {
		return domain.ChainReport{}, fmt.Errorf("after %d records: %w", n, err)
	}
	return v.Finish(true), nil
}

// isCut tells that start is a retention cut: the chain kept starts after
// a record whose hash is known.
func isCut(start domain.ChainStart) bool { return start.Next > 1 && start.Prev != "" && !start.Resume }

// cutBreak is the break to report when the retention cut start is not at
// one of the valid checkpoints.
func cutBreak(start domain.ChainStart, valid []domain.AuditCheckpoint) (domain.ChainBreak, bool) {
	if slices.ContainsFunc(valid, func(cp domain.AuditCheckpoint) bool { return cp.Seq == start.Next-1 && cp.Hash == start.Prev }) {
		return domain.ChainBreak{}, false
	}
	return domain.ChainBreak{Kind: domain.BreakCheckpointMissing, Seq: start.Next - 1, Last: start.Next - 1,
		Reason: "the retention cut is not at a valid signed checkpoint: the records before it cannot be vouched for"}, true
}

// Checkpoints returns signed checkpoints with Seq > after, oldest first,
// at most MaxPageSize, and the cursor of the next page (0 when none).
func (a *Audit) Checkpoints(ctx context.Context, after int64, limit int) ([]domain.AuditCheckpoint, int64, error) {
	if a.checkpoints == nil {
		return []domain.AuditCheckpoint{}, 0, nil
	}
	if limit <= 0 || limit > MaxPageSize {
		limit = MaxPageSize
	}
	cps, err := a.checkpoints.Checkpoints(ctx, after, limit+1)
	if err != nil {
		return nil, 0, err
	}
	if len(cps) > limit {
		return cps[:limit], cps[limit-1].Seq, nil
	}
	return cps, 0, nil
}

// Export calls emit for every record with Seq > after, oldest first, page
// by page; it stops at the first error emit returns. It starts at the
// first record kept: records up to a retention cut that are not deleted
// yet (the removal is under way) are not the chain's any more.
func (a *Audit) Export(ctx context.Context, after int64, emit func(domain.AuditRecord) error) error {
	first, err := a.chainStart(ctx)
	if err != nil {
		return err
	}
	after = max(after, first.Next-1)
	for {
		recs, err := a.store.AuditChain(ctx, after, chainPage)
		if err != nil || len(recs) == 0 {
			return err
		}
		for _, r := range recs {
			if err := emit(r); err != nil {
				return err
			}
		}
		after = recs[len(recs)-1].Seq
	}
}
