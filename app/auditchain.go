package app

import (
	"context"

	"github.com/agentauth/agentauth/domain"
)

// chainPage is how many records verification and export read at a time, so
// neither holds the whole log in memory.
const chainPage = 1000

// ChainReport is the outcome of verifying the audit hash chain.
type ChainReport struct {
	OK      bool
	Checked int64
	// Head is the hash of the last record checked (GenesisHash when empty).
	Head string
	// Break is the first broken link, when OK is false.
	Break *domain.ChainBreak
}

// Verify walks the whole chain from the first record and reports the first
// broken link: an edited, removed or reordered record breaks it.
func (a *Audit) Verify(ctx context.Context) (ChainReport, error) {
	rep := ChainReport{OK: true, Head: domain.GenesisHash}
	var after int64
	for {
		recs, err := a.store.AuditChain(ctx, after, chainPage)
		if err != nil {
			return ChainReport{}, err
		}
		if brk := domain.VerifyChain(rep.Head, recs); brk != nil {
			for _, r := range recs {
				if r.Seq == brk.Seq {
					break
				}
				rep.Checked++
			}
			rep.OK, rep.Break = false, brk
			return rep, nil
		}
		if len(recs) == 0 {
			return rep, nil
		}
		rep.Checked += int64(len(recs))
		rep.Head, after = recs[len(recs)-1].Hash, recs[len(recs)-1].Seq
	}
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
