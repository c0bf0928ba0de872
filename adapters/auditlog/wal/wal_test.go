package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func entries(from, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "entry %d", from+i)
	}
	return out
}

func readAll(t *testing.T, l *Log, from uint64) []string {
	t.Helper()
	var got []string
	err := l.Read(from, func(n uint64, data []byte) error {
		if want := fmt.Sprintf("entry %d", n); string(data) != want {
			return fmt.Errorf("entry %d holds %q", n, data)
		}
		got = append(got, string(data))
		return nil
	})
	if err != nil {
		t.Fatalf("Read(%d): %v", from, err)
	}
	return got
}

func TestAppendReadAcrossSegmentsAndReopen(t *testing.T) {
	old := segmentSize
	segmentSize = 100 // a new segment every few entries
	defer func() { segmentSize = old }()
	dir := t.TempDir()
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 50; i += 5 {
		if err := l.Append(entries(i, 5)); err != nil {
			t.Fatal(err)
		}
	}
	if got := readAll(t, l, 1); len(got) != 50 {
		t.Fatalf("read %d entries, want 50", len(got))
	}
	if got := readAll(t, l, 33); len(got) != 18 || got[0] != "entry 33" {
		t.Fatalf("Read(33) = %d entries from %q", len(got), got[0])
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if n, data := l.Last(); n != 50 || string(data) != "entry 50" {
		t.Fatalf("Last() after reopen = %d %q, want 50 \"entry 50\"", n, data)
	}
	if err := l.Append(entries(51, 1)); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l, 1); len(got) != 51 {
		t.Fatalf("read %d entries, want 51", len(got))
	}
	if err := l.RemoveBefore(30); err != nil {
		t.Fatal(err)
	}
	if first := l.First(); first > 30 || first < 20 {
		t.Errorf("First() after RemoveBefore(30) = %d, want the segment holding 30", first)
	}
	if got := readAll(t, l, 30); got[0] != "entry 30" {
		t.Errorf("Read(30) after RemoveBefore starts at %q", got[0])
	}
}

func TestTornTailIsCutAndEarlierEntriesKept(t *testing.T) {
	tests := []struct {
		name string
		tear func(data []byte) []byte
	}{
		{"half a header", func(b []byte) []byte { return append(b, 9, 0) }},
		{"half a payload", func(b []byte) []byte { return append(b, 20, 0, 0, 0, 1, 2, 3, 4, 'x') }},
		{"bad checksum", func(b []byte) []byte { return append(b, 1, 0, 0, 0, 1, 2, 3, 4, 'x') }},
		{"zeroes", func(b []byte) []byte { return append(b, make([]byte, 4096)...) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Append(entries(1, 3)); err != nil {
				t.Fatal(err)
			}
			l.Close()
			seg := filepath.Join(dir, fmt.Sprintf("%020d.seg", 1))
			data, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(seg, tt.tear(data), 0o600); err != nil {
				t.Fatal(err)
			}
			l, err = Open(dir)
			if err != nil {
				t.Fatalf("Open after a torn write: %v", err)
			}
			defer l.Close()
			if n, _ := l.Last(); n != 3 {
				t.Fatalf("Last() = %d, want 3", n)
			}
			if err := l.Append(entries(4, 1)); err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, l, 1); len(got) != 4 {
				t.Errorf("read %d entries after recovery, want 4", len(got))
			}
		})
	}
}

func TestDamageBeforeTheNewestSegmentIsReported(t *testing.T) {
	old := segmentSize
	segmentSize = 30
	defer func() { segmentSize = old }()
	dir := t.TempDir()
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 1; i <= 6; i += 2 {
		if err := l.Append(entries(i, 2)); err != nil {
			t.Fatal(err)
		}
	}
	seg := filepath.Join(dir, fmt.Sprintf("%020d.seg", 1))
	data, _ := os.ReadFile(seg)
	data[len(data)-1] ^= 1
	if err := os.WriteFile(seg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.Read(1, func(uint64, []byte) error { return nil }); err == nil {
		t.Error("Read over a damaged segment succeeded")
	}
}

func TestSecondOpenIsRefusedAndFilesAreOwnerOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Append(entries(1, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrLocked) {
		t.Errorf("second Open = %v, want ErrLocked", err)
	}
	st, _ := os.Stat(dir)
	if st.Mode().Perm() != 0o700 {
		t.Errorf("folder mode %v, want 0700", st.Mode().Perm())
	}
	files, _ := os.ReadDir(dir)
	for _, f := range files {
		info, _ := f.Info()
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", f.Name(), info.Mode().Perm())
		}
	}
}

// FuzzTornTail: whatever a crash leaves after the last whole frame, Open
// keeps every entry before it and appends after them.
func FuzzTornTail(f *testing.F) {
	f.Add([]byte{9, 0})
	f.Add([]byte{20, 0, 0, 0, 1, 2, 3, 4, 'x'})
	f.Fuzz(func(t *testing.T, tail []byte) {
		dir := t.TempDir()
		l, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append(entries(1, 3)); err != nil {
			t.Fatal(err)
		}
		l.Close()
		seg := filepath.Join(dir, fmt.Sprintf("%020d.seg", 1))
		data, _ := os.ReadFile(seg)
		if err := os.WriteFile(seg, append(data, tail...), 0o600); err != nil {
			t.Fatal(err)
		}
		l, err = Open(dir)
		if err != nil {
			t.Fatalf("Open after a torn write: %v", err)
		}
		defer l.Close()
		n, _ := l.Last()
		if n < 3 {
			t.Fatalf("Last() = %d: entries before the tail were lost", n)
		}
		var got []string
		if err := l.Read(1, func(_ uint64, data []byte) error { got = append(got, string(data)); return nil }); err != nil {
			t.Fatal(err)
		}
		for i, want := range []string{"entry 1", "entry 2", "entry 3"} {
			if got[i] != want {
				t.Fatalf("entry %d = %q after recovery, want %q", i+1, got[i], want)
			}
		}
	})
}
