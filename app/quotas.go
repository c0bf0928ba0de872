package app

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Quotas counts the calls that the limits of rules and tools admit
// (domain.Limit), in the store every instance shares, and keeps this
// instance's tally of what it counted and refused for /metrics.
type Quotas struct {
	store ports.QuotaStore
	clock ports.Clock
	tally sync.Map // "policy rule pol_…" or "tool fs.read" → *quotaTally
}

type quotaTally struct{ counted, exceeded atomic.Int64 }

// NewQuotas wires the counting over store; a nil store counts nothing and
// refuses every call a limit applies to (it could not be counted).
func NewQuotas(store ports.QuotaStore, clock ports.Clock) *Quotas {
	return &Quotas{store: store, clock: clock}
}

// Charge counts the call decided d for in against the deciding rule's
// limit and the tool's, and returns d, or the quota_exceeded refusal when
// one is used up (then nothing is counted). A denied call counts nothing.
func (q *Quotas) Charge(ctx context.Context, in domain.ToolCallInput, d domain.ToolDecision) (domain.ToolDecision, error) {
	charges := domain.QuotaCharges(in, d)
	if len(charges) == 0 {
		return d, nil
	}
	if q == nil || q.store == nil {
		return domain.QuotaRefusal(d, charges[0], charges[0].End), nil
	}
	i, end, err := q.store.ChargeQuotas(ctx, charges)
	if err != nil {
		return domain.ToolDecision{}, err
	}
	if i >= 0 {
		q.count(charges[i].Of).exceeded.Add(1)
		return domain.QuotaRefusal(d, charges[i], end), nil
	}
	for _, c := range charges {
		q.count(c.Of).counted.Add(1)
	}
	return d, nil
}

func (q *Quotas) count(of string) *quotaTally {
	if t, ok := q.tally.Load(of); ok {
		return t.(*quotaTally)
	}
	t, _ := q.tally.LoadOrStore(of, &quotaTally{})
	return t.(*quotaTally)
}

// QuotaTally is what this instance counted against one limit, and refused.
type QuotaTally struct {
	Of                string
	Counted, Exceeded int64
}

// Tally lists this instance's counts by limit, in order.
func (q *Quotas) Tally() []QuotaTally {
	var out []QuotaTally
	q.tally.Range(func(k, v any) bool {
		t := v.(*quotaTally)
		out = append(out, QuotaTally{Of: k.(string), Counted: t.counted.Load(), Exceeded: t.exceeded.Load()})
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Of < out[j].Of })
	return out
}

// Use lists the counters of the windows running now (every instance's
// calls), the fullest first, at most 200.
func (q *Quotas) Use(ctx context.Context) ([]domain.QuotaUse, error) {
	if q == nil || q.store == nil {
		return []domain.QuotaUse{}, nil
	}
	return q.store.QuotaUse(ctx, q.clock.Now().UTC(), 200)
}
