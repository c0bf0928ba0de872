package app

import (
	"context"
	"crypto/ed25519"
	"fmt"
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
	// step starts at the latest checkpoint whose signature holds (or the
	// first record when there is none).
	From    int64
	HasFrom bool
	Limit   int // records to read, clamped to [1, MaxVerifyRecords]
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
func (a *Audit) VerifyStep(ctx context.Context, req VerifyRequest) (VerifyStep, error) {
	limit := req.Limit
	if limit <= 0 || limit > MaxVerifyRecords {
		limit = MaxVerifyRecords
	}
	var (
		start   = a.chainStart()
		last    domain.AuditCheckpoint
		hasLast bool
		latest  []domain.AuditCheckpoint // the latest checkpoint, when valid: a truncation shows against it
		pre     []domain.ChainBreak
	)
	if a.checkpoints != nil {
		var err error
		if last, hasLast, err = a.checkpoints.LastCheckpoint(ctx); err != nil {
			return VerifyStep{}, err
		}
		if hasLast {
			if _, br := domain.VerifyCheckpoints([]domain.AuditCheckpoint{last}, a.keys, "", false); len(br) > 0 {
				pre = append(pre, br...)
			} else {
				latest = append(latest, last)
			}
		}
	}
	switch {
	case req.HasFrom && req.From > 0:
		start = domain.ChainStart{Next: req.From, Resume: true}
	case req.HasFrom:
	case len(latest) == 1:
		head, err := a.store.QueryAudit(ctx, ports.AuditQuery{Limit: 1})
		if err != nil {
			return VerifyStep{}, err
		}
		switch {
		case len(head) == 0: // every record is gone: from the first
		case head[0].Seq < last.Seq: // truncated: from the head, to report it
			start = domain.ChainStart{Next: head[0].Seq}
		default:
			start = domain.ChainStart{Next: last.Seq}
		}
	}
	after := start.Next - 1
	if start.Resume {
		limit++ // the anchor is read, not checked
	}
	var anchors []domain.AuditCheckpoint
	if a.checkpoints != nil {
		// Checkpoint seqs are unique, so limit+1 of them cover the step.
		cps, err := a.checkpoints.Checkpoints(ctx, after, limit+1)
		if err != nil {
			return VerifyStep{}, err
		}
		if hasLast && len(cps) > 0 && cps[len(cps)-1].Seq == last.Seq {
			cps = cps[:len(cps)-1] // checked above
		}
		valid, br := domain.VerifyCheckpoints(cps, a.keys, "", false)
		anchors, pre = append(valid, latest...), append(pre, br...)
	}
	v := domain.NewChainVerifier(start, anchors, MaxBreaks)
	for _, b := range pre {
		v.Report(b)
	}
	step := VerifyStep{From: start.Next}
	atHead := false
	for read := 0; read < limit; {
		want := min(chainPage, limit-read)
		recs, err := a.store.AuditChain(ctx, after, want)
		if err != nil {
			return VerifyStep{}, err
		}
		for _, r := range recs {
			v.Add(r)
		}
		read += len(recs)
		if len(recs) > 0 {
			after = recs[len(recs)-1].Seq
		}
		if len(recs) < want {
			atHead = true
			break
		}
	}
	if !atHead {
		more, err := a.store.AuditChain(ctx, after, 1)
		if err != nil {
			return VerifyStep{}, err
		}
		if atHead = len(more) == 0; !atHead {
			step.Next = after
		}
	}
	step.ChainReport = v.Finish(atHead)
	return step, nil
}

// chainStart is where the chain kept begins: the first record, or the
// record after the retention cut of a store that removed older ones.
func (a *Audit) chainStart() domain.ChainStart {
	if s, ok := a.store.(ports.AuditChainStarter); ok {
		return s.ChainStart()
	}
	return domain.Genesis
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
	if start.Next > 1 && !slices.ContainsFunc(valid, func(cp domain.AuditCheckpoint) bool {
		return cp.Seq == start.Next-1 && cp.Hash == start.Prev
	}) {
		v.Report(domain.ChainBreak{Kind: domain.BreakCheckpointMissing, Seq: start.Next - 1, Last: start.Next - 1,
			Reason: "the retention cut is not at a valid signed checkpoint: the records before it cannot be vouched for"})
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
// by page; it stops at the first error emit returns.
func (a *Audit) Export(ctx context.Context, after int64, emit func(domain.AuditRecord) error) error {
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
