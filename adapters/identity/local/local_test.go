package local_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/adapters/identity/local"
)

func TestLoadOrCreateKey(t *testing.T) {
	dir := t.TempDir()
	path := local.KeyPath(local.DataDir(dir))
	key, created, err := local.LoadOrCreateKey(path)
	if err != nil || !created || len(key) != 43 {
		t.Fatalf("first call: key of %d characters, created %v, err %v; want 43, true, nil", len(key), created, err)
	}
	again, created, err := local.LoadOrCreateKey(path)
	if err != nil || created || again != key {
		t.Errorf("second call: created %v, same key %v, err %v; want false, true, nil", created, again == key, err)
	}
	other, _, _ := local.LoadOrCreateKey(filepath.Join(t.TempDir(), "secrets", "api-key"))
	if other == key {
		t.Error("two data folders got the same key")
	}

	tests := []struct {
		name    string
		content string
		mode    os.FileMode
		want    string
	}{
		{"readable by others", key + "\n", 0o644, "chmod 600"},
		{"too short", "abc\n", 0o600, "fewer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "api-key")
			if err := os.WriteFile(p, []byte(tt.content), tt.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tt.mode); err != nil {
				t.Fatal(err)
			}
			if _, _, err := local.LoadOrCreateKey(p); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one saying %q", err, tt.want)
			}
		})
	}
}
