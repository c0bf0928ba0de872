package porttest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// IntentStore is a store whose changes carry audit intents: the sessions
// are the changes under test, the audit log settles them.
type IntentStore interface {
	ports.SessionStore
	ports.AuditStore
	ports.IntentRecovery
}

// RunIntentStore checks the transactional outbox of the audit log: a change
// and its intent commit together, a change without an intent is refused,
// the request's record settles its intents, and recovery turns what is left
// into exactly one record per request.
func RunIntentStore(t *testing.T, newStore Factory[IntentStore]) {
	t.Run("ChangeWithoutIntentIsRefused", func(t *testing.T) { testChangeWithoutIntent(t, newStore(t)) })
	t.Run("RecordSettlesIntents", func(t *testing.T) { testRecordSettlesIntents(t, newStore(t)) })
	t.Run("RecoveryRecordsEachRequestOnce", func(t *testing.T) { testRecoveryOnce(t, newStore(t)) })
	t.Run("RecoveryLeavesYoungIntents", func(t *testing.T) { testRecoveryCutoff(t, newStore(t)) })
	t.Run("ReusedRequestIDSettlesNothingElse", func(t *testing.T) { testReusedRequestID(t, newStore(t)) })
	t.Run("ConcurrentChangesFailAlone", func(t *testing.T) { testConcurrentChangesFailAlone(t, newStore(t)) })
}

// testConcurrentChangesFailAlone makes changes from many requests at once
// (the store commits them in shared transactions), a third of which the
// store refuses: each refused change fails its own request only, and
// every change made has its intent.
func testConcurrentChangesFailAlone(t *testing.T, st IntentStore) {
	if err := st.CreateSession(withIntent(ctxFor(t), "taken"), session("taken", "alice", base)); err != nil {
		t.Fatal(err)
	}
	const n = 48
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := withIntent(ctxFor(t), fmt.Sprintf("r%d", i))
			switch i % 3 {
			case 0: // refused: the id exists
				errs[i] = st.CreateSession(ctx, session("taken", "bob", base))
			case 1: // refused: nothing to delete
				errs[i] = st.DeleteSession(ctx, fmt.Sprintf("missing%d", i))
			default:
				errs[i] = st.CreateSession(ctx, session(fmt.Sprintf("s%d", i), "bob", base))
			}
		}()
	}
	wg.Wait()
	made := 1
	for i, err := range errs {
		var want error
		switch i % 3 {
		case 0:
			want = domain.ErrConflict
		case 1:
			want = domain.ErrNotFound
		}
		if want == nil {
			if err != nil {
				t.Errorf("change %d: %v, want it made", i, err)
				continue
			}
			made++
			if _, err := st.GetSession(ctxFor(t), fmt.Sprintf("s%d", i)); err != nil {
				t.Errorf("change %d answered as made, then GetSession: %v", i, err)
			}
		} else if !errors.Is(err, want) {
			t.Errorf("change %d: error = %v, want %v", i, err, want)
		}
	}
	if got, err := st.GetSession(ctxFor(t), "taken"); err != nil || got.Owner != "alice" {
		t.Errorf("the session taken = %+v, %v; want alice's unchanged", got, err)
	}
	pending(t, st, made)
}

// recordOf is the audit record of the request whose intent ctx carries.
func recordOf(ctx context.Context, status int) domain.AuditRecord {
	in := ports.AuditIntentFrom(ctx)
	return domain.AuditRecord{Time: time.Now(), RequestID: in.RequestID, IntentKey: in.Key, Decision: domain.AuditAllow, Status: status}
}

func pending(t *testing.T, st IntentStore, want int) {
	t.Helper()
	n, err := st.PendingIntents(ctxFor(t))
	if err != nil {
		t.Fatalf("PendingIntents: %v", err)
	}
	if n != want {
		t.Errorf("PendingIntents = %d, want %d", n, want)
	}
}

func testChangeWithoutIntent(t *testing.T, st IntentStore) {
	ctx := context.Background()
	if err := st.CreateSession(ctx, session("s1", "alice", base)); !errors.Is(err, ports.ErrNoAuditIntent) {
		t.Fatalf("CreateSession without intent: error = %v, want ports.ErrNoAuditIntent", err)
	}
	if _, err := st.GetSession(ctxFor(t), "s1"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("the refused change was made: GetSession error = %v, want domain.ErrNotFound", err)
	}
	pending(t, st, 0)
}

func testRecordSettlesIntents(t *testing.T, st IntentStore) {
	ctx := withIntent(ctxFor(t), "r1")
	if err := st.CreateSession(ctx, session("s1", "alice", base)); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	// Failed changes leave no intent.
	if err := st.DeleteSession(ctx, "s1"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("second delete: %v, want not found", err)
	}
	other := withIntent(ctxFor(t), "r2")
	if err := st.CreateSession(other, session("s2", "bob", base)); err != nil {
		t.Fatal(err)
	}
	pending(t, st, 3)
	// A request that changed nothing carries no key and settles nothing.
	if err := st.AppendAudit(ctx, []domain.AuditRecord{recordOf(ctx, 204), recordOf(withIntent(ctxFor(t), "r3"), 200)}); err != nil {
		t.Fatal(err)
	}
	pending(t, st, 1)
	if err := st.AppendAudit(ctx, []domain.AuditRecord{recordOf(other, 201)}); err != nil {
		t.Fatal(err)
	}
	pending(t, st, 0)
	recs, err := st.RecoverIntents(ctx, time.Now().Add(time.Hour))
	if err != nil || len(recs) != 0 {
		t.Errorf("RecoverIntents after every record: %d records, %v; want none", len(recs), err)
	}
}

func testRecoveryOnce(t *testing.T, st IntentStore) {
	r1, r2 := withIntent(ctxFor(t), "r1"), withIntent(ctxFor(t), "r2")
	for _, step := range []struct {
		ctx context.Context
		do  func(context.Context) error
	}{
		{r1, func(ctx context.Context) error { return st.CreateSession(ctx, session("s1", "alice", base)) }},
		{r2, func(ctx context.Context) error { return st.CreateSession(ctx, session("s2", "bob", base)) }},
		{r1, func(ctx context.Context) error { return st.DeleteSession(ctx, "s1") }},
	} {
		if err := step.do(step.ctx); err != nil {
			t.Fatal(err)
		}
	}
	// One request answered normally before the crash: its record is first.
	if err := st.AppendAudit(ctxFor(t), []domain.AuditRecord{{Time: time.Now(), RequestID: "r0", Decision: domain.AuditAllow, Status: 200}}); err != nil {
		t.Fatal(err)
	}
	recs, err := st.RecoverIntents(ctxFor(t), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatalf("RecoverIntents: %v", err)
	}
	if len(recs) != 2 {
		t.Fatalf("RecoverIntents appended %d records, want 2 (one per request): %+v", len(recs), recs)
	}
	want := map[string][]string{"r1": {"create session s1", "delete session s1"}, "r2": {"create session s2"}}
	for _, r := range recs {
		if r.Decision != domain.AuditAllow || !strings.HasPrefix(r.Reason, domain.RecoveredPrefix) || r.Subject != "porttest" {
			t.Errorf("recovered record %+v: want decision allow, subject porttest, reason starting %q", r, domain.RecoveredPrefix)
		}
		for _, change := range want[r.RequestID] {
			if !strings.Contains(r.Reason, change) {
				t.Errorf("record of %s does not name %q: %s", r.RequestID, change, r.Reason)
			}
		}
		delete(want, r.RequestID)
	}
	if len(want) > 0 {
		t.Errorf("no recovered record for %v", want)
	}
	pending(t, st, 0)
	again, err := st.RecoverIntents(ctxFor(t), time.Now().Add(time.Minute))
	if err != nil || len(again) != 0 {
		t.Errorf("second recovery: %d records, %v; want none", len(again), err)
	}
	chain, err := st.AuditChain(ctxFor(t), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(chain) != 3 {
		t.Errorf("chain has %d records, want 3", len(chain))
	}
	if breaks := domain.VerifyChain(domain.GenesisHash, chain); len(breaks) > 0 {
		t.Errorf("chain broken: %+v", breaks)
	}
}

func testRecoveryCutoff(t *testing.T, st IntentStore) {
	if err := st.CreateSession(withIntent(ctxFor(t), "r1"), session("s1", "alice", base)); err != nil {
		t.Fatal(err)
	}
	recs, err := st.RecoverIntents(ctxFor(t), time.Now().Add(-time.Hour))
	if err != nil || len(recs) != 0 {
		t.Errorf("RecoverIntents before the change: %d records, %v; want none", len(recs), err)
	}
	pending(t, st, 1)
}

// testReusedRequestID: a caller may choose its request id (X-Request-ID).
// A second request with the id of one whose record was lost must not
// settle the first one's changes with its own record.
func testReusedRequestID(t *testing.T, st IntentStore) {
	first, second := withIntent(ctxFor(t), "same-id"), withIntent(ctxFor(t), "same-id")
	if err := st.CreateSession(first, session("s1", "alice", base)); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(second, session("s2", "alice", base)); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendAudit(second, []domain.AuditRecord{recordOf(second, 201)}); err != nil {
		t.Fatal(err)
	}
	pending(t, st, 1)
	recs, err := st.RecoverIntents(ctxFor(t), time.Now().Add(time.Minute))
	if err != nil || len(recs) != 1 || !strings.Contains(recs[0].Reason, "create session s1") {
		t.Fatalf("RecoverIntents = %+v, %v; want one record of the first request's change", recs, err)
	}
	pending(t, st, 0)
}
