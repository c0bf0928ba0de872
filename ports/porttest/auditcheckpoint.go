package porttest

import (
	"crypto/ed25519"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// RunCheckpointStore checks a ports.AuditCheckpointStore.
func RunCheckpointStore(t *testing.T, newStore Factory[ports.AuditCheckpointStore]) {
	t.Run("AppendChainsAndLists", func(t *testing.T) { testCheckpointAppend(t, newStore(t)) })
}

// RunSharedCheckpointStore checks that instances appending checkpoints at
// once extend one chain: each sees the checkpoint the one before stored.
func RunSharedCheckpointStore(t *testing.T, open SharedFactory[ports.AuditCheckpointStore]) {
	t.Run("ConcurrentAppendsFromInstances", func(t *testing.T) { testCheckpointConcurrent(t, open(t, 3)) })
}

var checkpointKey = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))

// nextCheckpoint is the signer's rule: extend the last checkpoint with a
// newer head, else skip.
func nextCheckpoint(seq int64) func(*domain.AuditCheckpoint) (domain.AuditCheckpoint, bool) {
	return func(last *domain.AuditCheckpoint) (domain.AuditCheckpoint, bool) {
		cp := domain.AuditCheckpoint{Seq: seq, Hash: fmt.Sprintf("%064x", seq), Time: base.Add(time.Duration(seq) * time.Second)}
		if last != nil {
			if last.Seq >= seq {
				return domain.AuditCheckpoint{}, false
			}
			cp.Prev = last.Digest()
		}
		cp.Sign(checkpointKey)
		return cp, true
	}
}

func verifyCheckpoints(t *testing.T, st ports.AuditCheckpointStore) []domain.AuditCheckpoint {
	t.Helper()
	all, err := st.Checkpoints(ctxFor(t), 0, 1000)
	if err != nil {
		t.Fatalf("Checkpoints: %v", err)
	}
	pub := checkpointKey.Public().(ed25519.PublicKey)
	valid, breaks := domain.VerifyCheckpoints(all, map[string]ed25519.PublicKey{domain.AuditKeyID(pub): pub}, "", true)
	if len(breaks) > 0 || len(valid) != len(all) {
		t.Fatalf("stored checkpoints do not verify: %+v", breaks)
	}
	return all
}

func testCheckpointAppend(t *testing.T, st ports.AuditCheckpointStore) {
	ctx := ctxFor(t)
	if _, ok, err := st.LastCheckpoint(ctx); ok || err != nil {
		t.Fatalf("LastCheckpoint on an empty store = %v, %v; want none", ok, err)
	}
	var stored []domain.AuditCheckpoint
	for _, seq := range []int64{10, 20, 20, 15, 35} {
		cp, ok, err := st.AppendCheckpoint(ctx, nextCheckpoint(seq))
		if err != nil {
			t.Fatalf("AppendCheckpoint(%d): %v", seq, err)
		}
		if ok {
			stored = append(stored, cp)
		}
	}
	if len(stored) != 3 {
		t.Fatalf("stored %d checkpoints, want 3 (10, 20, 35: older heads are skipped)", len(stored))
	}
	all := verifyCheckpoints(t, st)
	if len(all) != 3 {
		t.Fatalf("Checkpoints = %d, want 3", len(all))
	}
	for i, want := range stored {
		if g := all[i]; g.Seq != want.Seq || g.Hash != want.Hash || !g.Time.Equal(want.Time) || g.Prev != want.Prev ||
			g.KeyID != want.KeyID || g.Signature != want.Signature {
			t.Errorf("checkpoint %d = %+v, want %+v", i, g, want)
		}
	}
	page, err := st.Checkpoints(ctx, 10, 1)
	if err != nil || len(page) != 1 || page[0].Seq != 20 {
		t.Errorf("Checkpoints(after 10, limit 1) = %+v, %v; want the one at 20", page, err)
	}
	last, ok, err := st.LastCheckpoint(ctx)
	if err != nil || !ok || last.Seq != 35 || last.Signature != stored[2].Signature {
		t.Errorf("LastCheckpoint = %+v, %v, %v; want the one at 35", last, ok, err)
	}
	for _, tt := range []struct {
		seq, want int64 // 0: none
	}{{9, 0}, {10, 10}, {19, 10}, {20, 20}, {34, 20}, {35, 35}, {1 << 40, 35}} {
		cp, ok, err := st.NewestCheckpointThrough(ctx, tt.seq)
		if err != nil || ok != (tt.want != 0) || cp.Seq != tt.want {
			t.Errorf("NewestCheckpointThrough(%d) = seq %d, %v, %v; want %d", tt.seq, cp.Seq, ok, err, tt.want)
		}
	}
	if cp, _, _ := st.NewestCheckpointThrough(ctx, 20); cp.Signature != stored[1].Signature || cp.Prev != stored[1].Prev {
		t.Errorf("NewestCheckpointThrough(20) = %+v, want %+v", cp, stored[1])
	}
}

func testCheckpointConcurrent(t *testing.T, handles []ports.AuditCheckpointStore) {
	const perWriter = 10
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				// Writers race with interleaved heads, as instances do.
				if _, _, err := handles[w%len(handles)].AppendCheckpoint(ctxFor(t), nextCheckpoint(int64(i*6+w+1))); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("concurrent AppendCheckpoint failed %d times; first: %v", len(errs), errs[0])
	}
	all := verifyCheckpoints(t, handles[0])
	for i := 1; i < len(all); i++ {
		if all[i].Seq <= all[i-1].Seq {
			t.Fatalf("checkpoint seqs not increasing: %d after %d", all[i].Seq, all[i-1].Seq)
		}
	}
	if len(all) == 0 || all[len(all)-1].Seq != 6*perWriter {
		t.Errorf("last checkpoint = %v, want seq %d", all[len(all)-1:], 6*perWriter)
	}
}
