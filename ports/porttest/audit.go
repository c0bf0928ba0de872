package porttest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// RunAuditStore checks a ports.AuditStore.
func RunAuditStore(t *testing.T, newStore Factory[ports.AuditStore]) {
	t.Run("AppendAssignsSeqAndChains", func(t *testing.T) { testAuditAppend(t, newStore(t)) })
	t.Run("AppendEmptyIsNoOp", func(t *testing.T) {
		st := newStore(t)
		if err := st.AppendAudit(ctxFor(t), nil); err != nil {
			t.Fatalf("AppendAudit(nil): %v", err)
		}
		got, err := st.AuditChain(ctxFor(t), 0, 10)
		if err != nil {
			t.Fatalf("AuditChain: %v", err)
		}
		if len(got) != 0 {
			t.Errorf("AuditChain after empty append = %d records, want 0", len(got))
		}
	})
	t.Run("FieldsRoundTrip", func(t *testing.T) { testAuditRoundTrip(t, newStore(t)) })
	t.Run("HostileBytesStoredAsSealed", func(t *testing.T) { testAuditHostileBytes(t, newStore(t)) })
	t.Run("Query", func(t *testing.T) { testAuditQuery(t, newStore(t)) })
	t.Run("QueryMatchesAFullScan", func(t *testing.T) { testAuditQueryMatchesScan(t, newStore(t)) })
	t.Run("ChainPages", func(t *testing.T) { testAuditChainPages(t, newStore(t)) })
	t.Run("ConcurrentAppends", func(t *testing.T) {
		st := newStore(t)
		testAuditConcurrent(t, []ports.AuditStore{st, st, st, st})
	})
}

// RunSharedAuditStore checks that several handles onto one database (as
// several service instances hold) append into one unbroken chain and lose
// nothing.
func RunSharedAuditStore(t *testing.T, open SharedFactory[ports.AuditStore]) {
	t.Run("ConcurrentAppendsFromInstances", func(t *testing.T) { testAuditConcurrent(t, open(t, 3)) })
}

func record(i int, subject string, decision domain.AuditDecision, at time.Time) domain.AuditRecord {
	return domain.AuditRecord{
		Time: at, RequestID: fmt.Sprintf("req-%04d", i), Subject: subject,
		Roles: []domain.Role{domain.RoleUser}, AuthMethod: domain.MethodAPIKey,
		Method: "GET", Path: "/api/v2/sessions", Decision: decision,
		Reason: "role USER grants sessions:read", Status: 200,
	}
}

// verifyAll reads the whole chain and checks every link from genesis.
func verifyAll(t *testing.T, st ports.AuditStore) []domain.AuditRecord {
	t.Helper()
	got, err := st.AuditChain(ctxFor(t), 0, 1_000_000)
	if err != nil {
		t.Fatalf("AuditChain: %v", err)
	}
	if br := domain.VerifyChain(domain.GenesisHash, got); br != nil {
		t.Fatalf("chain broken: %+v", br)
	}
	for i, r := range got {
		if want := int64(i + 1); r.Seq != want {
			t.Fatalf("record %d has seq %d, want %d (no gaps)", i, r.Seq, want)
		}
	}
	return got
}

func testAuditAppend(t *testing.T, st ports.AuditStore) {
	ctx := ctxFor(t)
	first := []domain.AuditRecord{record(1, "alice", domain.AuditAllow, base), record(2, "bob", domain.AuditDeny, base)}
	if err := st.AppendAudit(ctx, first); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}
	for i, r := range first {
		if want := int64(i + 1); r.Seq != want {
			t.Errorf("after AppendAudit, record %d Seq = %d, want %d", i, r.Seq, want)
		}
	}
	if first[0].PrevHash != domain.GenesisHash {
		t.Errorf("first record PrevHash = %q, want GenesisHash", first[0].PrevHash)
	}
	second := []domain.AuditRecord{record(3, "carol", domain.AuditAllow, base.Add(time.Second))}
	if err := st.AppendAudit(ctx, second); err != nil {
		t.Fatalf("AppendAudit (second call): %v", err)
	}
	if got, want := second[0].PrevHash, first[1].Hash; got != want {
		t.Errorf("second append PrevHash = %q, want the head's hash %q", got, want)
	}
	got := verifyAll(t, st)
	if len(got) != 3 {
		t.Fatalf("AuditChain = %d records, want 3", len(got))
	}
	for i, want := range append(first, second...) {
		if got[i].Hash != want.Hash {
			t.Errorf("stored record %d Hash = %q, want the hash AppendAudit set, %q", i, got[i].Hash, want.Hash)
		}
	}
}

func testAuditRoundTrip(t *testing.T, st ports.AuditStore) {
	ctx := ctxFor(t)
	recs := []domain.AuditRecord{
		{Time: base, RequestID: "r1", Subject: "alice", Roles: []domain.Role{domain.RoleAdmin, domain.RoleAuditor},
			AuthMethod: domain.MethodOIDC, Method: "DELETE", Path: "/api/v2/sessions/x'; --",
			Decision: domain.AuditAllow, Reason: "ünïcode reason", Status: 204},
		{Time: base.In(time.FixedZone("CET", 3600)), RequestID: "r2", Subject: "", Roles: nil,
			Method: "GET", Path: "/nope", Decision: domain.AuditDeny, Reason: "authentication required", Status: 401},
	}
	if err := st.AppendAudit(ctx, recs); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}
	got := verifyAll(t, st)
	if len(got) != len(recs) {
		t.Fatalf("AuditChain = %d records, want %d", len(got), len(recs))
	}
	for i, want := range recs {
		g := got[i]
		// Stores keep microseconds; the hash was computed on the truncated time.
		wantTime := base.Truncate(time.Microsecond)
		if !g.Time.Equal(wantTime) || g.RequestID != want.RequestID || g.Subject != want.Subject ||
			!slices.Equal(g.Roles, want.Roles) || g.AuthMethod != want.AuthMethod || g.Method != want.Method ||
			g.Path != want.Path || g.Decision != want.Decision || g.Reason != want.Reason || g.Status != want.Status {
			t.Errorf("record %d = %+v, want %+v (time %v)", i, g, want, wantTime)
		}
	}
}

// hostileRecord puts the bytes a caller may choose (invalid UTF-8, NUL
// and other controls, backslashes, oversized text) into every text field.
func hostileRecord(b string) domain.AuditRecord {
	return domain.AuditRecord{Time: base, RequestID: b, Subject: "sub" + b, Roles: []domain.Role{domain.RoleUser},
		AuthMethod: domain.AuthMethod(b), Method: "GE" + b, Path: "/" + b, Client: b, Decision: domain.AuditDeny,
		Reason: "no route matches " + b, Status: 401}
}

// testAuditHostileBytes: whatever bytes a caller sends, the store accepts
// the batch (no record fails the others), keeps exactly the sealed fields
// and the chain verifies.
func testAuditHostileBytes(t *testing.T, st ports.AuditStore) {
	ctx := ctxFor(t)
	inputs := []string{"\xff\xfe\xc3", `\xff`, "nul\x00byte", `\`, "tab\tnew\nline\x7f",
		"\xed\xa0\x80 surrogate", strings.Repeat("\xc3", 3000), strings.Repeat("é", 20_000), "ok"}
	recs := make([]domain.AuditRecord, len(inputs))
	for i, in := range inputs {
		recs[i] = hostileRecord(in)
	}
	if err := st.AppendAudit(ctx, recs); err != nil {
		t.Fatalf("AppendAudit with hostile bytes: %v", err)
	}
	got := verifyAll(t, st)
	if len(got) != len(inputs) {
		t.Fatalf("AuditChain = %d records, want %d", len(got), len(inputs))
	}
	for i, in := range inputs {
		g, w := got[i], recs[i]
		if g.RequestID != w.RequestID || g.Subject != w.Subject || g.AuthMethod != w.AuthMethod || g.Method != w.Method ||
			g.Path != w.Path || g.Client != w.Client || g.Reason != w.Reason || g.Hash != w.Hash || g.Version != domain.AuditV2 {
			t.Errorf("record %d stored as %+v, want the sealed %+v", i, g, w)
		}
		for _, f := range []string{g.RequestID, g.Path, g.Client, g.Reason} {
			if len(f) > domain.AuditFieldMax {
				t.Errorf("record %d keeps a field of %d bytes, want at most %d", i, len(f), domain.AuditFieldMax)
			}
		}
		back, err := domain.UnescapeAuditText(g.RequestID)
		if err != nil || (!back.Truncated && back.Text != in) || !strings.HasPrefix(in, back.Text) {
			t.Errorf("record %d request id unescapes to %+v, %v; want %q", i, back, err, in)
		}
	}
}

func testAuditQuery(t *testing.T, st ports.AuditStore) {
	ctx := ctxFor(t)
	// seq 1..6, one second apart: alice allow, bob deny, alice deny, bob allow, alice allow, bob deny.
	var recs []domain.AuditRecord
	for i := 0; i < 6; i++ {
		subject, decision := "alice", domain.AuditAllow
		if i%2 == 1 {
			subject = "bob"
		}
		if i == 1 || i == 2 || i == 5 {
			decision = domain.AuditDeny
		}
		recs = append(recs, record(i+1, subject, decision, base.Add(time.Duration(i)*time.Second)))
	}
	if err := st.AppendAudit(ctx, recs); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}
	tests := []struct {
		name string
		q    ports.AuditQuery
		want []int64
	}{
		{"all newest first", ports.AuditQuery{}, []int64{6, 5, 4, 3, 2, 1}},
		{"subject", ports.AuditQuery{Subject: "alice"}, []int64{5, 3, 1}},
		{"decision", ports.AuditQuery{Decision: domain.AuditDeny}, []int64{6, 3, 2}},
		{"subject and decision", ports.AuditQuery{Subject: "bob", Decision: domain.AuditAllow}, []int64{4}},
		{"since inclusive", ports.AuditQuery{Since: base.Add(4 * time.Second)}, []int64{6, 5}},
		{"until exclusive", ports.AuditQuery{Until: base.Add(2 * time.Second)}, []int64{2, 1}},
		{"window", ports.AuditQuery{Since: base.Add(time.Second), Until: base.Add(3 * time.Second)}, []int64{3, 2}},
		{"before cursor", ports.AuditQuery{Before: 4}, []int64{3, 2, 1}},
		{"limit", ports.AuditQuery{Limit: 2}, []int64{6, 5}},
		{"cursor and limit", ports.AuditQuery{Before: 5, Limit: 2}, []int64{4, 3}},
		{"no match", ports.AuditQuery{Subject: "carol"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := st.QueryAudit(ctx, tt.q)
			if err != nil {
				t.Fatalf("QueryAudit(%+v): %v", tt.q, err)
			}
			var seqs []int64
			for _, r := range got {
				seqs = append(seqs, r.Seq)
			}
			if !slices.Equal(seqs, tt.want) {
				t.Errorf("QueryAudit(%+v) seqs = %v, want %v", tt.q, seqs, tt.want)
			}
		})
	}
}

// testAuditQueryMatchesScan checks every filter combination, with cursors
// and time windows anywhere, against a filter over the whole chain. The
// clock goes back now and then: the store keeps time non-decreasing along
// the chain, and a time window still selects by the stored times.
func testAuditQueryMatchesScan(t *testing.T, st ports.AuditStore) {
	ctx := ctxFor(t)
	rnd := rand.New(rand.NewPCG(1, 2))
	subjects := []string{"alice", "bob", "carol", "rare"}
	at := base
	for batch := 0; batch < 20; batch++ {
		recs := make([]domain.AuditRecord, 30)
		for i := range recs {
			at = at.Add(time.Duration(rnd.IntN(3000)) * time.Millisecond)
			when := at
			if rnd.IntN(10) == 0 {
				when = at.Add(-5 * time.Second) // a clock that went back
			}
			subject := subjects[rnd.IntN(3)]
			if rnd.IntN(50) == 0 {
				subject = "rare"
			}
			decision := domain.AuditAllow
			if rnd.IntN(5) == 0 {
				decision = domain.AuditDeny
			}
			recs[i] = record(batch*30+i, subject, decision, when)
		}
		if err := st.AppendAudit(ctx, recs); err != nil {
			t.Fatalf("AppendAudit: %v", err)
		}
	}
	all := verifyAll(t, st)
	for i := 1; i < len(all); i++ {
		if all[i].Time.Before(all[i-1].Time) {
			t.Fatalf("time goes back at seq %d", all[i].Seq)
		}
	}
	span := all[len(all)-1].Time.Sub(all[0].Time)
	pick := func() time.Time {
		return all[0].Time.Add(time.Duration(rnd.Int64N(int64(span)))).Truncate(time.Microsecond)
	}
	for n := 0; n < 300; n++ {
		var q ports.AuditQuery
		if rnd.IntN(2) == 0 {
			q.Subject = subjects[rnd.IntN(len(subjects))]
		}
		if rnd.IntN(2) == 0 {
			q.Decision = []domain.AuditDecision{domain.AuditAllow, domain.AuditDeny}[rnd.IntN(2)]
		}
		if rnd.IntN(2) == 0 {
			q.Since = pick()
		}
		if rnd.IntN(2) == 0 {
			q.Until = pick()
		}
		if rnd.IntN(2) == 0 {
			q.Before = rnd.Int64N(int64(len(all))+2) + 1
		}
		q.Limit = 1 + rnd.IntN(40)
		var want []int64
		for i := len(all) - 1; i >= 0 && len(want) < q.Limit; i-- {
			r := all[i]
			if (q.Subject == "" || r.Subject == q.Subject) && (q.Decision == "" || r.Decision == q.Decision) &&
				(q.Since.IsZero() || !r.Time.Before(q.Since)) && (q.Until.IsZero() || r.Time.Before(q.Until)) &&
				(q.Before == 0 || r.Seq < q.Before) {
				want = append(want, r.Seq)
			}
		}
		got, err := st.QueryAudit(ctx, q)
		if err != nil {
			t.Fatalf("QueryAudit(%+v): %v", q, err)
		}
		var seqs []int64
		for _, r := range got {
			seqs = append(seqs, r.Seq)
		}
		if !slices.Equal(seqs, want) {
			t.Fatalf("QueryAudit(%+v) = %v, want %v", q, seqs, want)
		}
	}
}

func testAuditChainPages(t *testing.T, st ports.AuditStore) {
	ctx := ctxFor(t)
	var recs []domain.AuditRecord
	for i := 1; i <= 7; i++ {
		recs = append(recs, record(i, "alice", domain.AuditAllow, base))
	}
	if err := st.AppendAudit(ctx, recs); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}
	// Walk the chain three at a time, verifying each page from the last hash.
	var (
		after int64
		prev  = domain.GenesisHash
		seen  []int64
	)
	for {
		page, err := st.AuditChain(ctx, after, 3)
		if err != nil {
			t.Fatalf("AuditChain(%d, 3): %v", after, err)
		}
		if len(page) > 3 {
			t.Fatalf("AuditChain(%d, 3) = %d records, want at most 3", after, len(page))
		}
		if len(page) == 0 {
			break
		}
		if br := domain.VerifyChain(prev, page); br != nil {
			t.Fatalf("page after %d: chain broken: %+v", after, br)
		}
		for _, r := range page {
			seen = append(seen, r.Seq)
		}
		after, prev = page[len(page)-1].Seq, page[len(page)-1].Hash
	}
	if want := []int64{1, 2, 3, 4, 5, 6, 7}; !slices.Equal(seen, want) {
		t.Errorf("paged seqs = %v, want %v", seen, want)
	}
}

// testAuditConcurrent appends batches from many goroutines spread over the
// handles and checks that every record is stored exactly once in one chain.
func testAuditConcurrent(t *testing.T, handles []ports.AuditStore) {
	const (
		writers   = 8
		batches   = 10
		batchSize = 5
	)
	ctx := ctxFor(t)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			st := handles[w%len(handles)]
			for b := 0; b < batches; b++ {
				batch := make([]domain.AuditRecord, batchSize)
				for i := range batch {
					batch[i] = record(0, fmt.Sprintf("writer-%d", w), domain.AuditAllow, base)
					batch[i].RequestID = fmt.Sprintf("w%d-b%d-r%d", w, b, i)
				}
				if err := st.AppendAudit(ctx, batch); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		}(w)
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("concurrent AppendAudit failed %d times; first: %v", len(errs), errs[0])
	}
	got := verifyAll(t, handles[0])
	if want := writers * batches * batchSize; len(got) != want {
		t.Fatalf("chain holds %d records, want %d", len(got), want)
	}
	seen := map[string]bool{}
	for _, r := range got {
		if seen[r.RequestID] {
			t.Fatalf("request id %s stored twice", r.RequestID)
		}
		seen[r.RequestID] = true
	}
	for w := 0; w < writers; w++ {
		for b := 0; b < batches; b++ {
			for i := 0; i < batchSize; i++ {
				if id := fmt.Sprintf("w%d-b%d-r%d", w, b, i); !seen[id] {
					t.Errorf("record %s is missing from the chain", id)
				}
			}
		}
	}
}
