package agenttoken

import (
	"os"
	"path/filepath"
	"testing"
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
