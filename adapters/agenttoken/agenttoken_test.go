package agenttoken

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// TestKeyFile: without a configured key (SQLite mode: config requires one
// with a database), the key is created owner-only in an owner-only folder
// on first start and reused after (same kid).
func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	var kid string
	for _, start := range []string{"first start creates the key", "second start reuses it"} {
		s, err := New(Settings{Issuer: "https://a.test", DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		got := s.JWKS().Keys[0].KeyID
		if kid != "" && got != kid {
			t.Errorf("%s: kid %s, want the first start's %s", start, got, kid)
		}
		kid = got
	}
	for path, want := range map[string]os.FileMode{DefaultKeyPath(dir): 0o600, filepath.Dir(DefaultKeyPath(dir)): 0o700} {
		info, err := os.Stat(path)
		if err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %04o", path, info.Mode().Perm(), err, want)
		}
	}
	if _, err := New(Settings{Issuer: "https://a.test", Key: "not-a-seed"}); err == nil {
		t.Error("a configured key that is not a seed was accepted")
	}
}

// clock is a settable time for the signer.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func grantUntil(exp time.Time) domain.AgentGrant {
	return domain.AgentGrant{ID: "tok_1", Subject: "alice", Chain: []string{"agt_1"}, Audience: "fs", Session: "ses_1",
		Mode: domain.ModeAuto, Tools: []string{"fs.read"}, IssuedAt: exp.Add(-time.Hour), Expires: exp}
}

// TestVerifiedTokensAreRememberedUntilTheyLapse: a token verified once is
// answered from memory, but never past its expiry nor past the end of the
// previous key's overlap, never for another text, and a caller changing
// the grant it got changes nothing remembered.
func TestVerifiedTokensAreRememberedUntilTheyLapse(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)
	oldDir := t.TempDir()
	c := &clock{t0}
	old, err := New(Settings{Issuer: "https://a.test", DataDir: oldDir, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	seed, err := os.ReadFile(DefaultKeyPath(oldDir))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := New(Settings{Issuer: "https://a.test", DataDir: t.TempDir(), PreviousKey: strings.TrimSpace(string(seed)),
		PreviousUntil: t0.Add(10 * time.Minute), Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	byCurrent, err := cur.Sign(grantUntil(t0.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	byPrevious, err := old.Sign(grantUntil(t0.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	tampered := byCurrent[:len(byCurrent)-2] + map[bool]string{true: "AA", false: "BB"}[!strings.HasSuffix(byCurrent, "AA")]
	tests := []struct {
		name  string
		at    time.Time
		token string
		ok    bool
	}{
		{"current key, first check", t0, byCurrent, true},
		{"current key, remembered", t0.Add(time.Minute), byCurrent, true},
		{"another text of a remembered token", t0.Add(time.Minute), tampered, false},
		{"previous key within the overlap", t0.Add(time.Minute), byPrevious, true},
		{"previous key remembered within the overlap", t0.Add(9 * time.Minute), byPrevious, true},
		{"previous key after the overlap", t0.Add(11 * time.Minute), byPrevious, false},
		{"current key still good", t0.Add(59 * time.Minute), byCurrent, true},
		{"current key after expiry and leeway", t0.Add(time.Hour + time.Minute), byCurrent, false},
	}
	for _, tt := range tests {
		c.t = tt.at
		g, err := cur.Verify(context.Background(), tt.token)
		if (err == nil) != tt.ok {
			t.Fatalf("%s: error %v, want ok %v", tt.name, err, tt.ok)
		}
		if err != nil {
			continue
		}
		if g.Agent() != "agt_1" || g.Session != "ses_1" {
			t.Errorf("%s: grant %+v", tt.name, g)
		}
		g.Chain[0], g.Tools[0] = "agt_other", "fs.write" // must not reach memory
	}
}
