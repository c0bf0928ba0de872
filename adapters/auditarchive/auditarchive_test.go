package auditarchive_test

import (
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentauth/agentauth/adapters/auditarchive"
	"github.com/agentauth/agentauth/adapters/auditjson"
	"github.com/agentauth/agentauth/domain"
)

// chain is n sealed records from seq 1.
func chain(n int) []domain.AuditRecord {
	out := make([]domain.AuditRecord, n)
	prev := domain.GenesisHash
	for i := range out {
		out[i] = domain.AuditRecord{Time: time.Unix(1_700_000_000+int64(i), 0).UTC(), RequestID: "r", Subject: "uma",
			Method: "GET", Path: "/api/v2/sessions", Decision: domain.AuditAllow, Reason: "ok", Status: 200}
		out[i].Seal(int64(i+1), prev)
		prev = out[i].Hash
	}
	return out
}

// from emits recs starting at seq first, leaving out the seqs in skip.
func from(recs []domain.AuditRecord, first int64, skip ...int64) auditarchive.Records {
	return func(emit func(domain.AuditRecord) error) error {
		for _, r := range recs[first-1:] {
			if slices.Contains(skip, r.Seq) {
				continue
			}
			if err := emit(r); err != nil {
				return err
			}
		}
		return nil
	}
}

func read(t *testing.T, path string) []domain.AuditRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []domain.AuditRecord
	if err := auditjson.ReadRecords(zr, func(r domain.AuditRecord) error { out = append(out, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWriteArchivesExactlyTheRangeOrNothing(t *testing.T) {
	recs := chain(20)
	boom := errors.New("read failed")
	tests := []struct {
		name          string
		from, through int64
		records       auditarchive.Records
		wantErr       bool
	}{
		{"from the first record", 1, 10, from(recs, 1), false},
		{"a later range, the source going on past it", 6, 15, from(recs, 6), false},
		{"the whole source", 11, 20, from(recs, 11), false},
		{"a record missing inside", 1, 10, from(recs, 1, 4), true},
		{"the source ends early", 11, 25, from(recs, 11), true},
		{"the source starts late", 1, 10, from(recs, 2), true},
		{"the source fails", 1, 10, func(func(domain.AuditRecord) error) error { return boom }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "archive")
			path, err := auditarchive.Write(dir, tt.from, tt.through, tt.records)
			if tt.wantErr {
				entries, _ := os.ReadDir(dir)
				if err == nil || len(entries) != 0 {
					t.Fatalf("Write = %v leaving %d files, want an error and no file", err, len(entries))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if path != filepath.Join(dir, auditarchive.Name(tt.from, tt.through)) {
				t.Errorf("path %s", path)
			}
			if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
				t.Fatalf("archive file: %v, %v; want mode 0600", st, err)
			}
			if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
				t.Fatalf("archive folder: %v, %v; want mode 0700", st, err)
			}
			got := read(t, path)
			want := recs[tt.from-1 : tt.through]
			if len(got) != len(want) {
				t.Fatalf("archive holds %d records, want %d", len(got), len(want))
			}
			for i := range got {
				if got[i].Seq != want[i].Seq || got[i].Hash != want[i].Hash || got[i].ChainHash() != want[i].Hash {
					t.Fatalf("record %d: %+v, want %+v", i, got[i], want[i])
				}
			}
		})
	}
}

// A rerun after a crash between the archive and the removal of its
// records: the same range replaces the file, a longer one supersedes it.
func TestWriteAgainIsIdempotent(t *testing.T) {
	recs := chain(30)
	dir := t.TempDir()
	for _, through := range []int64{10, 10, 20} {
		if _, err := auditarchive.Write(dir, 1, through, from(recs, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := auditarchive.Write(dir, 21, 30, from(recs, 21)); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{auditarchive.Name(1, 20), auditarchive.Name(21, 30)}
	if !slices.Equal(names, want) {
		t.Fatalf("archive folder holds %v, want %v", names, want)
	}
	if got := read(t, filepath.Join(dir, want[0])); len(got) != 20 {
		t.Fatalf("the superseding archive holds %d records, want 20", len(got))
	}
}
