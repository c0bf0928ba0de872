package domain

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"time"
)

// AuditDecision is the outcome recorded for a request.
type AuditDecision string

// Audit decisions.
const (
	AuditAllow AuditDecision = "allow"
	AuditDeny  AuditDecision = "deny"
)

// Audit record versions: how a record's Hash is computed.
const (
	// AuditV1 records were hashed over their fields as stored before the
	// audit text rule existed (decimal length prefixes, RFC 3339 time).
	// Records migrated from older databases keep it, so they still verify.
	AuditV1 = 1
	// AuditV2 records are sealed by Seal: escaped, bounded fields hashed
	// with binary length prefixes.
	AuditV2 = 2
)

// AuditRecord is one access decision. Records form a hash chain: each Hash
// covers the record's fields and the previous record's Hash, so editing or
// removing a committed record breaks every later link.
type AuditRecord struct {
	Seq        int64 // assigned when sealed, increasing
	Version    int   // AuditV1 or AuditV2; set by Seal
	Time       time.Time
	RequestID  string
	Subject    string
	Roles      []Role
	AuthMethod AuthMethod
	Method     string // HTTP method
	Path       string // request target as sent: path and query
	Client     string // client address
	Decision   AuditDecision
	Reason     string
	Status     int
	PrevHash   string
	Hash       string
	// IntentKey is not part of the record (neither hashed nor stored): the
	// key of the audit intents the request left (AuditIntent.Key), which the
	// transaction storing the record settles.
	IntentKey string
}

// GenesisHash is the PrevHash of the first record.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// Seal makes r the record with sequence number seq following a record whose
// hash is prev: it applies the audit text rule to every text field (escaped
// and bounded to AuditFieldMax; roles escaped one by one), truncates Time to
// the microsecond stores keep, and computes Hash (version AuditV2). Every
// store and log seals through this one function, so no two hash alike
// fields differently. r's text fields must be the raw values: sealing twice
// would escape twice.
func (r *AuditRecord) Seal(seq int64, prev string) {
	r.Seq, r.PrevHash, r.Version = seq, prev, AuditV2
	r.Time = r.Time.UTC().Truncate(time.Microsecond)
	r.RequestID = BoundAuditText(r.RequestID)
	r.Subject = BoundAuditText(r.Subject)
	copied := false
	for i, role := range r.Roles {
		if esc := EscapeAuditText(string(role)); esc != string(role) {
			if !copied { // the slice may be the caller's (a principal's roles)
				r.Roles, copied = append([]Role(nil), r.Roles...), true
			}
			r.Roles[i] = Role(esc)
		}
	}
	r.AuthMethod = AuthMethod(BoundAuditText(string(r.AuthMethod)))
	r.Method = BoundAuditText(r.Method)
	r.Path = BoundAuditText(r.Path)
	r.Client = BoundAuditText(r.Client)
	r.Decision = AuditDecision(BoundAuditText(string(r.Decision)))
	r.Reason = BoundAuditText(r.Reason)
	r.Hash = r.hashV2()
}

// ChainHash computes the hash the record's version defines over its fields
// and PrevHash.
func (r *AuditRecord) ChainHash() string {
	if r.Version == AuditV2 {
		return r.hashV2()
	}
	return r.hashV1()
}

// auditV2Tag starts every v2 hash input, so no other input hashes alike.
const auditV2Tag = "agentauth audit record v2\n"

// hashV2 is SHA-256 over auditV2Tag and then each field as an 8-byte
// big-endian length followed by its bytes: prev_hash, seq (8-byte
// big-endian), time (Unix microseconds, 8-byte big-endian two's
// complement), request_id, subject, roles (comma-joined), auth_method,
// method, path, client, decision, reason, status (8-byte big-endian).
func (r *AuditRecord) hashV2() string {
	var stack [512]byte
	b := append(stack[:0], auditV2Tag...)
	text := func(s string) {
		b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	num := func(v int64) {
		b = binary.BigEndian.AppendUint64(b, 8)
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	text(r.PrevHash)
	num(r.Seq)
	num(r.Time.UnixMicro())
	text(r.RequestID)
	text(r.Subject)
	b = binary.BigEndian.AppendUint64(b, uint64(rolesLen(r.Roles)))
	for i, role := range r.Roles {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, role...)
	}
	text(string(r.AuthMethod))
	text(r.Method)
	text(r.Path)
	text(r.Client)
	text(string(r.Decision))
	text(r.Reason)
	num(int64(r.Status))
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// rolesLen is len(JoinRoles(roles)) without building it.
func rolesLen(roles []Role) int {
	n := 0
	for i, r := range roles {
		if i > 0 {
			n++
		}
		n += len(r)
	}
	return n
}

// hashV1 is the hash of AuditV1 records: SHA-256 over prev_hash, seq, time
// (RFC 3339 with nanoseconds, UTC), request_id, subject, roles, auth_method,
// method, path, decision, reason and status, each as its decimal length,
// ':' and its text.
func (r *AuditRecord) hashV1() string {
	h := sha256.New()
	var buf []byte
	field := func(s string) {
		buf = strconv.AppendInt(buf[:0], int64(len(s)), 10)
		buf = append(buf, ':')
		buf = append(buf, s...)
		h.Write(buf)
	}
	field(r.PrevHash)
	field(strconv.FormatInt(r.Seq, 10))
	field(r.Time.UTC().Format(time.RFC3339Nano))
	field(r.RequestID)
	field(r.Subject)
	field(JoinRoles(r.Roles))
	field(string(r.AuthMethod))
	field(r.Method)
	field(r.Path)
	field(string(r.Decision))
	field(r.Reason)
	field(strconv.Itoa(r.Status))
	return hex.EncodeToString(h.Sum(nil))
}
