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
		if _, err := l.Append(entries(i, 5)); err != nil {
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
	if _, err := l.Append(entries(51, 1)); err != nil {
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
			if _, err := l.Append(entries(1, 3)); err != nil {
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
			if _, err := l.Append(entries(4, 1)); err != nil {
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
		if _, err := l.Append(entries(i, 2)); err != nil {
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
	if _, err := l.Append(entries(1, 1)); err != nil {
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
		if _, err := l.Append(entries(1, 3)); err != nil {
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

// TestFetchReadsEntriesWhereAppendAndScanSayTheyAre: the positions Append
// returns and Scan reports are the same, and Fetch reads entries from
// them in any order, across segments, small and larger than its window.
func TestFetchReadsEntriesWhereAppendAndScanSayTheyAre(t *testing.T) {
	old := segmentSize
	segmentSize = 200
	defer func() { segmentSize = old }()
	l, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	big := make([]byte, 3*fetchWindow)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	var (
		want     [][]byte
		appended []Pos
	)
	for i := 1; i <= 40; i += 4 {
		batch := entries(i, 4)
		if i == 21 {
			batch[1] = big
		}
		at, err := l.Append(batch)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range batch {
			want, appended = append(want, e), append(appended, at)
			at.Offset += FrameSize(len(e))
		}
	}
	var scanned []Pos
	if err := l.Scan(1, func(_ uint64, at Pos, _ []byte) error { scanned = append(scanned, at); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(scanned) != fmt.Sprint(appended) {
		t.Fatalf("Scan positions %v\nAppend positions %v", scanned, appended)
	}
	tests := []struct {
		name  string
		order []int
	}{
		{"in order", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"newest first", []int{39, 30, 22, 21, 20, 3, 0}},
		{"scattered, repeated", []int{5, 5, 38, 1, 21, 21, 17}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := make([]Pos, len(tt.order))
			for i, k := range tt.order {
				at[i] = appended[k]
			}
			err := l.Fetch(at, func(i int, data []byte) error {
				if k := tt.order[i]; string(data) != string(want[k]) {
					return fmt.Errorf("entry %d: got %d bytes %.20q, want %.20q", k+1, len(data), data, want[k])
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("no entry there", func(t *testing.T) {
		bad := appended[3]
		bad.Offset += 3
		if err := l.Fetch([]Pos{bad}, func(int, []byte) error { return nil }); err == nil {
			t.Fatal("Fetch at a position inside a frame succeeded")
		}
		gone := Pos{Segment: 999999, Offset: 0}
		if err := l.Fetch([]Pos{gone}, func(int, []byte) error { return nil }); err == nil {
			t.Fatal("Fetch from a missing segment succeeded")
		}
	})
}

// TestSegmentsMadeAheadAreUsedAndTheirZerosCutAtOpen: a new segment is the
// spare made ahead (its length reserved and zeroed); readers stop at the
// zeros after the last frame, with the log open or not, and Open cuts them
// off like a torn tail.
func TestSegmentsMadeAheadAreUsedAndTheirZerosCutAtOpen(t *testing.T) {
	old := segmentSize
	segmentSize = 1024
	defer func() { segmentSize = old }()
	dir := t.TempDir()
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	appendOne := func() {
		t.Helper()
		n++
		if _, err := l.Append(entries(n, 1)); err != nil {
			t.Fatal(err)
		}
	}
	for len(l.segments) < 2 {
		<-l.spareDone // the spare is ready before the log needs it
		appendOne()
	}
	appendOne()
	newest := l.segmentPath(l.segments[len(l.segments)-1])
	if st, err := os.Stat(newest); err != nil || st.Size() != segmentSize {
		t.Fatalf("new segment: %v, %v; want the spare's %d bytes", st, err, segmentSize)
	}
	var offline []string
	if err := ReadDir(dir, 1, func(_ uint64, data []byte) error { offline = append(offline, string(data)); return nil }); err != nil || len(offline) != n {
		t.Fatalf("ReadDir beside the open log: %d entries, %v; want %d", len(offline), err, n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if last, data := l.Last(); last != uint64(n) || string(data) != fmt.Sprintf("entry %d", n) {
		t.Fatalf("Last() after reopen = %d %q, want %d", last, data, n)
	}
	if got := readAll(t, l, 1); len(got) != n {
		t.Fatalf("read %d entries after reopen, want %d", len(got), n)
	}
	if st, err := os.Stat(newest); err != nil || st.Size() >= segmentSize {
		t.Fatalf("newest segment after reopen: %v, %v; want the zeros cut off", st, err)
	}
	appendOne()
	if got := readAll(t, l, 1); len(got) != n {
		t.Fatalf("read %d entries after appending, want %d", len(got), n)
	}
}
