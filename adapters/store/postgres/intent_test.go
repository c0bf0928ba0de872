package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/adapters/store/postgres"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// TestRecoveryOnTwoInstancesRecordsOnce: instances recovering at the same
// time claim each left intent once, so every lost change gets exactly one
// record, and the chain stays one line.
func TestRecoveryOnTwoInstancesRecordsOnce(t *testing.T) {
	stores := sharedStores[*postgres.Store](t, 2)
	const requests = 40
	for i := range requests {
		ctx := ports.WithAuditIntent(t.Context(), &domain.AuditIntent{RequestID: fmt.Sprint("lost-", i), Subject: "alice"})
		s := domain.Session{ID: fmt.Sprint("s", i), Owner: "alice", Mode: domain.ModeAsk, State: domain.SessionActive, CreatedAt: time.Now()}
		if err := stores[i%2].CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		recovered = map[string]int{}
	)
	for round := range 3 {
		for _, st := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				recs, err := st.RecoverIntents(context.Background(), time.Now().Add(time.Minute))
				if err != nil {
					t.Errorf("round %d: RecoverIntents: %v", round, err)
				}
				mu.Lock()
				defer mu.Unlock()
				for _, r := range recs {
					recovered[r.RequestID]++
				}
			}()
		}
	}
	wg.Wait()
	if len(recovered) != requests {
		t.Errorf("%d requests recovered, want %d", len(recovered), requests)
	}
	for id, n := range recovered {
		if n != 1 {
			t.Errorf("request %s recovered %d times", id, n)
		}
	}
	chain, err := stores[0].AuditChain(t.Context(), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(chain) != requests {
		t.Errorf("chain has %d records, want %d", len(chain), requests)
	}
	if breaks := domain.VerifyChain(domain.GenesisHash, chain); len(breaks) > 0 {
		t.Errorf("chain broken: %+v", breaks)
	}
}
