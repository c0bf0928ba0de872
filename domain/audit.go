package domain

import (
	"crypto/sha256"
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

// AuditRecord is one access decision. Records form a hash chain: each Hash
// covers the record's fields and the previous record's Hash, so editing or
// removing a committed record breaks every later link.
type AuditRecord struct {
	Seq        int64 // assigned by the store, increasing
	Time       time.Time
	RequestID  string
	Subject    string
	Roles      []Role
	AuthMethod AuthMethod
	Method     string // HTTP method
	Path       string
	Decision   AuditDecision
	Reason     string
	Status     int
	PrevHash   string
	Hash       string
}

// GenesisHash is the PrevHash of the first record.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// ChainHash computes the record's hash given the previous record's hash.
// Fields are length-prefixed so that no two different records encode alike.
func (r AuditRecord) ChainHash(prev string) string {
	h := sha256.New()
	var buf []byte
	field := func(s string) {
		buf = strconv.AppendInt(buf[:0], int64(len(s)), 10)
		buf = append(buf, ':')
		buf = append(buf, s...)
		h.Write(buf)
	}
	field(prev)
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

// ChainBreak describes the first record whose link does not hold.
type ChainBreak struct {
	Seq    int64
	Reason string
}

// VerifyChain checks records given in increasing Seq order, starting after a
// record whose hash is prev (GenesisHash for the first record). It returns
// the first broken link, or nil when the chain holds.
func VerifyChain(prev string, records []AuditRecord) *ChainBreak {
	for _, r := range records {
		if r.PrevHash != prev {
			return &ChainBreak{Seq: r.Seq, Reason: "prev_hash does not match the previous record's hash"}
		}
		if r.ChainHash(prev) != r.Hash {
			return &ChainBreak{Seq: r.Seq, Reason: "hash does not match the record's contents"}
		}
		prev = r.Hash
	}
	return nil
}
