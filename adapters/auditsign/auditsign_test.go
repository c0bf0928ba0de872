package auditsign_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentauth/agentauth/adapters/auditjson"
	"github.com/agentauth/agentauth/adapters/auditsign"
	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"

	"github.com/agentauth/agentauth/internal/testwait"
)

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	key, path, created, err := auditsign.LoadKey(dir)
	if err != nil || !created || path != auditsign.DefaultKeyPath(dir) {
		t.Fatalf("first LoadKey = %s, created %v, %v; want a new key at the default path", path, created, err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode = %v, %v; want 0600", info.Mode(), err)
	}
	again, _, created, err := auditsign.LoadKey(dir)
	if err != nil || created || !again.Equal(key) {
		t.Fatalf("second LoadKey: created %v, %v, same key %v; want the same key", created, err, again.Equal(key))
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := auditsign.LoadKey(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a key file readable by its group: %v, want a refusal", err)
	}
	for _, bad := range []string{"", strings.Repeat("x", 60), "AAAA"} {
		if _, err := auditsign.ParseSeed(bad); err == nil || !strings.Contains(err.Error(), "Ed25519 seed") {
			t.Errorf("ParseSeed(%q) = %v, want a refusal", bad, err)
		}
	}
	seeded, err := auditsign.ParseSeed("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n")
	if err != nil || seeded[0] != 0 || seeded[31] != 31 {
		t.Errorf("ParseSeed of a padded seed with a newline: %v", err)
	}
	// A configured key is used as given and no key file is created.
	other := t.TempDir()
	c, closeSigner, err := auditsign.New(newStore(t, other), auditsign.Settings{Key: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8",
		DataDir: other, Every: 1, Interval: time.Hour, Out: io.Discard}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	closeSigner()
	if !c.PublicKey().Equal(seeded.Public()) {
		t.Error("the configured key is not the one used")
	}
	if _, err := os.Stat(auditsign.DefaultKeyPath(other)); err == nil {
		t.Error("a key file was created although a key was configured")
	}
}

func newStore(t *testing.T, dir string) *sqlite.Store {
	t.Helper()
	st, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(dir, "a.db")), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeStore)
	return st
}

// TestCheckpointer: every N records, and at Close, a checkpoint of the
// observed head is stored, chained and signed, and written as one JSON log
// line that reads back as the stored checkpoint.
func TestCheckpointer(t *testing.T) {
	dir := t.TempDir()
	st, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(dir, "a.db")), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	var out bytes.Buffer
	c, closeSigner, err := auditsign.New(st, auditsign.Settings{DataDir: dir, Every: 3, Interval: time.Hour, Out: &out}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	pubText, err := os.ReadFile(auditsign.PublicKeyPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := auditsign.ParsePublicKey(string(pubText))
	if err != nil || !pub.Equal(c.PublicKey()) {
		t.Fatalf("published key %q: %v", pubText, err)
	}
	for i := 1; i <= 7; i++ {
		rec := []domain.AuditRecord{{Time: time.Now(), Subject: "s", Decision: domain.AuditAllow, Status: 200}}
		if err := st.AppendAudit(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		c.Observe(rec[0].Seq, rec[0].Hash)
		if rec[0].Seq%3 == 0 {
			// Signing is asynchronous: wait for the checkpoint this record
			// made due, so the test does not depend on the scheduler.
			waitForCheckpoint(t, st, rec[0].Seq)
		}
	}
	closeSigner()
	stored, err := st.Checkpoints(context.Background(), 0, 100)
	if err != nil || len(stored) < 2 || stored[len(stored)-1].Seq != 7 {
		t.Fatalf("checkpoints = %+v, %v; want several, the last at 7 (Close)", stored, err)
	}
	logged, err := auditjson.ReadCheckpoints(&out)
	if err != nil || len(logged) != len(stored) {
		t.Fatalf("log lines hold %d checkpoints (%v), want %d:\n%s", len(logged), err, len(stored), out.String())
	}
	for i := range stored {
		if logged[i] != stored[i] {
			t.Errorf("logged %+v, stored %+v", logged[i], stored[i])
		}
	}
	valid, breaks := domain.VerifyCheckpoints(stored, app.KeySet(c.PublicKey()), "", true)
	if len(breaks) > 0 || len(valid) != len(stored) {
		t.Errorf("checkpoints do not verify: %+v", breaks)
	}
	other, _, _ := ed25519.GenerateKey(nil)
	if _, breaks := domain.VerifyCheckpoints(stored, app.KeySet(other), "", true); len(breaks) != len(stored) {
		t.Errorf("under another key: %d breaks, want every checkpoint invalid (%d)", len(breaks), len(stored))
	}
}

// waitForCheckpoint polls until a checkpoint at seq or later is stored.
func waitForCheckpoint(t *testing.T, st *sqlite.Store, seq int64) {
	t.Helper()
	testwait.Until(t, 30*time.Second, fmt.Sprintf("a checkpoint at seq %d", seq), func() (bool, string) {
		cps, err := st.Checkpoints(context.Background(), 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(cps) > 0 && cps[len(cps)-1].Seq >= seq, fmt.Sprintf("%+v", cps)
	})
}

// TestAnotherKeysChainIsRefused: checkpoints form one chain signed by one
// key. An instance whose key did not sign the latest checkpoint stored
// refuses to start, naming the setting and both key ids; one that meets
// another key's checkpoint after it started (an instance started with
// another key on an empty database) refuses to extend that chain.
func TestAnotherKeysChainIsRefused(t *testing.T) {
	const ours, theirs = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE"
	ourKey, _ := auditsign.ParseSeed(ours)
	theirKey, _ := auditsign.ParseSeed(theirs)
	ourID, theirID := domain.AuditKeyID(ourKey.Public().(ed25519.PublicKey)), domain.AuditKeyID(theirKey.Public().(ed25519.PublicKey))
	theirCheckpoint := func(seq int64) func(*domain.AuditCheckpoint) (domain.AuditCheckpoint, bool) {
		return func(last *domain.AuditCheckpoint) (domain.AuditCheckpoint, bool) {
			cp := domain.AuditCheckpoint{Seq: seq, Hash: strings.Repeat("ab", 32), Time: time.Now()}
			if last != nil {
				cp.Prev = last.Digest()
			}
			cp.Sign(theirKey)
			return cp, true
		}
	}
	settings := func(dir string) auditsign.Settings {
		return auditsign.Settings{Key: ours, DataDir: dir, Every: 1, Interval: time.Hour, Out: io.Discard}
	}

	t.Run("at start", func(t *testing.T) {
		dir := t.TempDir()
		st := newStore(t, dir)
		if _, _, err := st.AppendCheckpoint(t.Context(), theirCheckpoint(3)); err != nil {
			t.Fatal(err)
		}
		_, _, err := auditsign.New(st, settings(dir), zap.NewNop())
		if err == nil {
			t.Fatal("New with another key than the latest checkpoint's started")
		}
		for _, want := range []string{"SERVICE_AUDIT_SIGNING_KEY", "audit.signingKeyFile", ourID, theirID, "seq 3"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
		}
		// The key that signed it starts.
		s := settings(dir)
		s.Key = theirs
		_, closeSigner, err := auditsign.New(st, s, zap.NewNop())
		if err != nil {
			t.Fatalf("New with the chain's key: %v", err)
		}
		closeSigner()
	})

	t.Run("when signing", func(t *testing.T) {
		dir := t.TempDir()
		st := newStore(t, dir)
		core, logs := observer.New(zap.ErrorLevel)
		c, closeSigner, err := auditsign.New(st, settings(dir), zap.New(core))
		if err != nil {
			t.Fatal(err)
		}
		// Another instance, with its key, signs first.
		if _, _, err := st.AppendCheckpoint(t.Context(), theirCheckpoint(3)); err != nil {
			t.Fatal(err)
		}
		c.Observe(5, strings.Repeat("cd", 32))
		closeSigner() // signs the last head, or refuses to
		cps, err := st.Checkpoints(t.Context(), 0, 10)
		if err != nil || len(cps) != 1 || cps[0].KeyID != theirID {
			t.Fatalf("checkpoints = %+v, %v; want only the other key's", cps, err)
		}
		entries := logs.All()
		if len(entries) == 0 || !strings.Contains(entries[0].Message, "another key") {
			t.Fatalf("logged %+v, want an error about the other key", entries)
		}
		if f := entries[0].ContextMap(); f["chain_key_id"] != theirID || f["key_id"] != ourID {
			t.Errorf("log fields %v, want both key ids", f)
		}
	})
}

// TestDeriveKey: instances configured with one signing key derive one key
// per purpose (so their redaction markers agree); another seed or another
// purpose gives another key.
func TestDeriveKey(t *testing.T) {
	signer := func(seed string) *auditsign.Checkpointer {
		dir := t.TempDir()
		st, closeStore, err := sqlite.Open(sqlite.Path(filepath.Join(dir, "a.db")), zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(closeStore)
		c, closeSigner, err := auditsign.New(st, auditsign.Settings{Key: seed, DataDir: dir, Every: 3, Interval: time.Hour, Out: io.Discard}, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(closeSigner)
		return c
	}
	const seedA, seedB = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", "HxAREhMUFRYXGBkaGxwdHh8AAQIDBAUGBwgJCgsMDQ4"
	a1, a2, b := signer(seedA), signer(seedA), signer(seedB)
	if got, want := a1.DeriveKey("p"), a2.DeriveKey("p"); !bytes.Equal(got, want) || len(got) != 32 {
		t.Errorf("one seed: keys %x and %x, want equal 32-byte keys", got, want)
	}
	if bytes.Equal(a1.DeriveKey("p"), b.DeriveKey("p")) || bytes.Equal(a1.DeriveKey("p"), a1.DeriveKey("q")) {
		t.Error("another seed or purpose gave the same key")
	}
}
