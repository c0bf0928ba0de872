// Package auditarchive writes the audit records that retention removes to
// archive files: gzip-compressed NDJSON, one record per line in the
// export's form (adapters/auditjson), named by the first and last sequence
// numbers they hold. Both stores' retention write them the same way, so an
// archive verifies offline like an export.
package auditarchive

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentauth/agentauth/adapters/auditjson"
	"github.com/agentauth/agentauth/domain"
)

// Name is the file records from..through are archived in.
func Name(from, through int64) string {
	return fmt.Sprintf("audit-%020d-%020d.ndjson.gz", from, through)
}

// Records emits records in sequence order from a given one on; it stops
// when emit returns an error and returns that error.
type Records func(emit func(domain.AuditRecord) error) error

// errDone stops Records once the last record to archive was written.
var errDone = errors.New("auditarchive: done")

// Write archives records from..through, taken from records (which starts
// at from), into dir/Name(from, through) (0600, in a 0700 folder): written
// to a temporary file, synced, then renamed and the folder synced, so the
// archive is durable once Write returns and a crash never leaves a partial
// one under its name. Every number from..through must be present, in
// order. Running it again for the same records replaces the file with the
// same content; an earlier archive starting at from and ending before
// through (an attempt whose records were not removed) is deleted once the
// new one, which holds all of it, is durable.
func Write(dir string, from, through int64, records Records) (string, error) {
	final := filepath.Join(dir, Name(from, through))
	if err := write(dir, final, from, through, records); err != nil {
		return "", fmt.Errorf("auditarchive: archive records %d to %d: %w", from, through, err)
	}
	return final, removeSuperseded(dir, from, through)
}

func write(dir, final string, from, through int64, records Records) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp := final + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // gone after the rename
	zw := gzip.NewWriter(f)
	bw := bufio.NewWriterSize(zw, 1<<16)
	enc := json.NewEncoder(bw)
	next := from
	err = records(func(r domain.AuditRecord) error {
		if r.Seq != next {
			return fmt.Errorf("record %d where %d was expected", r.Seq, next)
		}
		if err := enc.Encode(auditjson.FromRecord(r)); err != nil {
			return err
		}
		if next++; next > through {
			return errDone
		}
		return nil
	})
	if errors.Is(err, errDone) {
		err = nil
	} else if err == nil && next <= through {
		err = fmt.Errorf("records %d to %d are missing", next, through)
	}
	if err = errors.Join(err, bw.Flush(), zw.Close(), f.Sync(), f.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	return SyncDir(dir)
}

// removeSuperseded deletes the archives of from..n with n < through.
func removeSuperseded(dir string, from, through int64) error {
	names, err := filepath.Glob(filepath.Join(dir, fmt.Sprintf("audit-%020d-*.ndjson.gz", from)))
	if err != nil {
		return err
	}
	for _, name := range names {
		var f, t int64
		if _, err := fmt.Sscanf(filepath.Base(name), "audit-%020d-%020d.ndjson.gz", &f, &t); err != nil || f != from || t >= through {
			continue
		}
		if err := os.Remove(name); err != nil {
			return fmt.Errorf("auditarchive: remove the superseded archive %s: %w", name, err)
		}
	}
	return nil
}

// SyncDir makes the entries of dir (files created or renamed in it)
// durable.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
