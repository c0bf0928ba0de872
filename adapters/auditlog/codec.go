package auditlog

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// codecVersion leads every log entry, so that a later encoding can be told
// apart from this one.
const codecVersion = 1

// encode appends the log entry of a sealed record (domain.AuditRecord.Seal:
// what is hashed is what is kept): a codec version byte, then
// every field in a fixed order, numbers as varints and text as a uvarint
// length and its bytes, so that any byte string round-trips exactly.
func encode(b []byte, r *domain.AuditRecord) []byte {
	b = append(b, codecVersion)
	b = binary.AppendVarint(b, r.Seq)
	b = binary.AppendVarint(b, int64(r.Version))
	b = binary.AppendVarint(b, r.Time.UnixMicro())
	for _, s := range [...]string{r.RequestID, r.Subject, domain.JoinRoles(r.Roles), string(r.AuthMethod), r.Method, r.Path,
		r.Client, string(r.Decision), r.Reason} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendVarint(b, int64(r.Status))
	for _, s := range [...]string{r.PrevHash, r.Hash} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

var errEntry = errors.New("auditlog: malformed log entry")

// decode is the inverse of encode.
func decode(b []byte) (domain.AuditRecord, error) {
	var r domain.AuditRecord
	if len(b) == 0 || b[0] != codecVersion {
		return r, errEntry
	}
	b = b[1:]
	bad := false
	num := func() int64 {
		v, n := binary.Varint(b)
		if n <= 0 {
			bad = true
			return 0
		}
		b = b[n:]
		return v
	}
	text := func() string {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			bad = true
			return ""
		}
		s := string(b[n : n+int(l)])
		b = b[n+int(l):]
		return s
	}
	r.Seq = num()
	r.Version = int(num())
	r.Time = time.UnixMicro(num()).UTC()
	r.RequestID, r.Subject = text(), text()
	r.Roles = domain.SplitRoles(text())
	r.AuthMethod, r.Method, r.Path, r.Client = domain.AuthMethod(text()), text(), text(), text()
	r.Decision, r.Reason = domain.AuditDecision(text()), text()
	r.Status = int(num())
	r.PrevHash, r.Hash = text(), text()
	if bad || len(b) != 0 {
		return domain.AuditRecord{}, errEntry
	}
	return r, nil
}
