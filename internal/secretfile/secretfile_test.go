package secretfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		mode          os.FileMode
		want, wantErr string
	}{
		{"owner only, trailing newline", "s3cret\n", 0o600, "s3cret", ""},
		{"read-only for the owner", "s3cret", 0o400, "s3cret", ""},
		{"readable by the group", "s3cret\n", 0o640, "", "has mode 0640; it must be readable by its owner only (chmod 600"},
		{"readable by others", "s3cret\n", 0o604, "", "chmod 600"},
		{"empty", " \n", 0o600, "", "is empty"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, string(rune('a'+i)))
			if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tt.mode); err != nil {
				t.Fatal(err)
			}
			got, err := Read(p)
			if got != tt.want || (tt.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Read = %q, %v; want %q, error containing %q", got, err, tt.want, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
	if _, err := Read(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestLoadOrCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets", "key")
	const n = 8
	secrets := make([]string, n)
	var created int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, c, err := LoadOrCreate(path)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			secrets[i] = s
			if c {
				created++
			}
		}()
	}
	wg.Wait()
	for _, s := range secrets {
		if s != secrets[0] || len(s) != 43 {
			t.Fatalf("secrets %q: want one secret of 43 characters", secrets)
		}
	}
	if created != 1 {
		t.Errorf("created by %d callers, want 1", created)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if info, err := os.Stat(p); err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %04o", p, info.Mode().Perm(), err, want)
		}
	}
}
