// Package auditjson is the JSON form of audit records, checkpoints and
// chain breaks: what the API answers, the NDJSON export and the checkpoint
// log lines hold, and what `agentauth audit verify` reads back. One form
// for all of them, so an export verifies offline exactly as it was served.
package auditjson

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// Record is one audit record. Its text fields are sealed (escaped and
// bounded, see domain.EscapeAuditText), so JSON keeps them byte for byte.
type Record struct {
	Seq        int64             `json:"seq"`
	Version    int               `json:"version"`
	Time       time.Time         `json:"time"`
	RequestID  string            `json:"request_id"`
	Subject    string            `json:"subject"`
	Roles      []domain.Role     `json:"roles"`
	AuthMethod domain.AuthMethod `json:"auth_method"`
	Method     string            `json:"method"`
	Path       string            `json:"path"`
	Client     string            `json:"client"`
	Decision   string            `json:"decision"`
	Reason     string            `json:"reason"`
	Status     int               `json:"status"`
	PrevHash   string            `json:"prev_hash"`
	Hash       string            `json:"hash"`
}

// FromRecord is r's JSON form.
func FromRecord(r domain.AuditRecord) Record {
	roles := r.Roles
	if roles == nil {
		roles = []domain.Role{}
	}
	return Record{Seq: r.Seq, Version: r.Version, Time: r.Time, RequestID: r.RequestID, Subject: r.Subject, Roles: roles,
		AuthMethod: r.AuthMethod, Method: r.Method, Path: r.Path, Client: r.Client, Decision: string(r.Decision), Reason: r.Reason,
		Status: r.Status, PrevHash: r.PrevHash, Hash: r.Hash}
}

// Domain is the record j holds.
func (j Record) Domain() domain.AuditRecord {
	roles := j.Roles
	if len(roles) == 0 {
		roles = nil
	}
	return domain.AuditRecord{Seq: j.Seq, Version: j.Version, Time: j.Time.UTC(), RequestID: j.RequestID, Subject: j.Subject,
		Roles: roles, AuthMethod: j.AuthMethod, Method: j.Method, Path: j.Path, Client: j.Client,
		Decision: domain.AuditDecision(j.Decision), Reason: j.Reason, Status: j.Status, PrevHash: j.PrevHash, Hash: j.Hash}
}

// Checkpoint is one signed checkpoint; Digest is derived (the next
// checkpoint's prev), given for convenience and not trusted when read.
type Checkpoint struct {
	Seq       int64     `json:"seq"`
	Hash      string    `json:"hash"`
	Time      time.Time `json:"time"`
	Prev      string    `json:"prev"`
	KeyID     string    `json:"key_id"`
	Signature string    `json:"signature"`
	Digest    string    `json:"digest"`
}

// FromCheckpoint is cp's JSON form.
func FromCheckpoint(cp domain.AuditCheckpoint) Checkpoint {
	return Checkpoint{Seq: cp.Seq, Hash: cp.Hash, Time: cp.Time, Prev: cp.Prev, KeyID: cp.KeyID, Signature: cp.Signature, Digest: cp.Digest()}
}

// Domain is the checkpoint j holds.
func (j Checkpoint) Domain() domain.AuditCheckpoint {
	return domain.AuditCheckpoint{Seq: j.Seq, Hash: j.Hash, Time: j.Time.UTC(), Prev: j.Prev, KeyID: j.KeyID, Signature: j.Signature}
}

// Break is one chain break.
type Break struct {
	Kind   domain.BreakKind `json:"kind"`
	Seq    int64            `json:"seq"`
	Last   int64            `json:"last"`
	Reason string           `json:"reason"`
}

// Breaks is the JSON form of breaks (never null).
func Breaks(breaks []domain.ChainBreak) []Break {
	out := make([]Break, len(breaks))
	for i, b := range breaks {
		out[i] = Break{Kind: b.Kind, Seq: b.Seq, Last: b.Last, Reason: b.Reason}
	}
	return out
}

// LogMessage is the msg of the log line each checkpoint is written to.
const LogMessage = "audit checkpoint"

// LogLine is the log line of a checkpoint, in the service's JSON log
// format, so that a log shipper keeps a copy outside the database.
type LogLine struct {
	Level      string     `json:"level"`
	TS         string     `json:"ts"`
	Logger     string     `json:"logger"`
	Msg        string     `json:"msg"`
	Checkpoint Checkpoint `json:"checkpoint"`
}

// ReadCheckpoints reads checkpoints from any of the forms they are found
// in: the API's answer ({"checkpoints": [...]}), NDJSON of checkpoints, or
// the service's log (lines with msg "audit checkpoint"; other lines are
// skipped).
func ReadCheckpoints(r io.Reader) ([]domain.AuditCheckpoint, error) {
	var out []domain.AuditCheckpoint
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		var v struct {
			Checkpoints []Checkpoint `json:"checkpoints"`
			Checkpoint  *Checkpoint  `json:"checkpoint"`
			Signature   string       `json:"signature"`
		}
		b := sc.Bytes()
		if len(b) == 0 || b[0] != '{' {
			continue // not JSON: another tool's log line
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("checkpoints line %d: %w", line, err)
		}
		switch {
		case v.Checkpoints != nil:
			for _, c := range v.Checkpoints {
				out = append(out, c.Domain())
			}
		case v.Checkpoint != nil:
			out = append(out, v.Checkpoint.Domain())
		case v.Signature != "":
			var c Checkpoint
			if err := json.Unmarshal(b, &c); err != nil {
				return nil, fmt.Errorf("checkpoints line %d: %w", line, err)
			}
			out = append(out, c.Domain())
		}
	}
	return out, sc.Err()
}

// ReadRecords reads an NDJSON export and calls emit for each record, in
// file order.
func ReadRecords(r io.Reader, emit func(domain.AuditRecord) error) error {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<20))
	for n := 1; ; n++ {
		var j Record
		if err := dec.Decode(&j); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("export record %d: %w", n, err)
		}
		if err := emit(j.Domain()); err != nil {
			return err
		}
	}
}
