package agenttoken

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestKeyFile: without a configured key, the key is created owner-only in
// an owner-only folder on first start and reused after (same kid); on a
// shared database an unconfigured key is warned about.
func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		shared bool
		warned bool
	}{
		{"first start creates the key", false, false},
		{"second start reuses it", false, false},
		{"shared database without a configured key", true, true},
	}
	var kid string
	for _, tt := range tests {
		core, logs := observer.New(zapcore.WarnLevel)
		s, err := New(Settings{Issuer: "https://a.test", DataDir: dir, Shared: tt.shared}, zap.New(core))
		if err != nil {
			t.Fatal(err)
		}
		got := s.JWKS().Keys[0].KeyID
		if kid != "" && got != kid {
			t.Errorf("%s: kid %s, want the first start's %s", tt.name, got, kid)
		}
		kid = got
		if (logs.Len() > 0) != tt.warned {
			t.Errorf("%s: %d warnings, want warned=%v", tt.name, logs.Len(), tt.warned)
		}
	}
	for path, want := range map[string]os.FileMode{DefaultKeyPath(dir): 0o600, filepath.Dir(DefaultKeyPath(dir)): 0o700} {
		info, err := os.Stat(path)
		if err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %04o", path, info.Mode().Perm(), err, want)
		}
	}
	if _, err := New(Settings{Issuer: "https://a.test", Key: "not-a-seed"}, zap.NewNop()); err == nil {
		t.Error("a configured key that is not a seed was accepted")
	}
}
