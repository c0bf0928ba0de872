package app

import (
	"context"

	"github.com/agentauth/agentauth/domain"
)

// chainPage is how many records verification and export read at a time, so
// neither holds the whole log in memory.
const chainPage = 1000

// maxBreaks caps the breaks a verification keeps (it counts them all).
const maxBreaks = 100

// Verify walks the whole chain from the first record and reports every
// break: an edited, removed or reordered record.
func (a *Audit) Verify(ctx context.Context) (domain.ChainReport, error) {
	v := domain.NewChainVerifier(domain.Genesis, nil, maxBreaks)
	if err := a.Export(ctx, 0, func(r domain.AuditRecord) error { v.Add(r); return nil }); err != nil {
		return domain.ChainReport{}, err
	}
	return v.Finish(true), nil
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
