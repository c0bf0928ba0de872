package domain

import (
	"testing"
	"time"
)

func chain(n int) []AuditRecord {
	prev := GenesisHash
	recs := make([]AuditRecord, n)
	for i := range recs {
		r := AuditRecord{Seq: int64(i + 1), Time: time.Date(2026, 1, 2, 3, 4, 5, i, time.UTC), RequestID: "r", Subject: "s",
			Roles: []Role{RoleUser}, Method: "GET", Path: "/p", Decision: AuditAllow, Reason: "ok", Status: 200, PrevHash: prev}
		r.Hash = r.ChainHash(prev)
		prev = r.Hash
		recs[i] = r
	}
	return recs
}

func TestVerifyChain(t *testing.T) {
	tests := []struct {
		name    string
		tamper  func([]AuditRecord) []AuditRecord
		wantSeq int64 // 0: chain holds
	}{
		{"intact", func(r []AuditRecord) []AuditRecord { return r }, 0},
		{"edited field", func(r []AuditRecord) []AuditRecord { r[2].Status = 403; return r }, 3},
		{"edited role", func(r []AuditRecord) []AuditRecord { r[1].Roles = []Role{RoleAdmin}; return r }, 2},
		{"removed record", func(r []AuditRecord) []AuditRecord { return append(r[:1], r[2:]...) }, 3},
		{"reordered", func(r []AuditRecord) []AuditRecord { r[0], r[1] = r[1], r[0]; return r }, 2},
		{"empty", func([]AuditRecord) []AuditRecord { return nil }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			br := VerifyChain(GenesisHash, tt.tamper(chain(4)))
			switch {
			case tt.wantSeq == 0 && br != nil:
				t.Errorf("got break at %d (%s), want none", br.Seq, br.Reason)
			case tt.wantSeq != 0 && (br == nil || br.Seq != tt.wantSeq):
				t.Errorf("got %+v, want break at seq %d", br, tt.wantSeq)
			}
		})
	}
}

func TestChainHashSeparatesFields(t *testing.T) {
	a := AuditRecord{Subject: "ab", Path: "c"}
	b := AuditRecord{Subject: "a", Path: "bc"}
	if a.ChainHash(GenesisHash) == b.ChainHash(GenesisHash) {
		t.Error("records differing only in field boundaries hash alike")
	}
}
