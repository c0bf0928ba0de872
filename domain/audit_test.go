package domain

import (
	"crypto/ed25519"
	"fmt"
	"slices"
	"testing"
	"time"
)

// chain seals n records the way a store does.
func chain(n int) []AuditRecord {
	prev := GenesisHash
	recs := make([]AuditRecord, n)
	for i := range recs {
		r := AuditRecord{Time: time.Date(2026, 1, 2, 3, 4, 5, i*1000, time.UTC), RequestID: "r", Subject: "s",
			Roles: []Role{RoleUser}, Method: "GET", Path: "/p", Client: "127.0.0.1", Decision: AuditAllow, Reason: "ok", Status: 200}
		r.Seal(int64(i+1), prev)
		prev = r.Hash
		recs[i] = r
	}
	return recs
}

// rehash recomputes the hashes of recs from index from on, as an attacker
// with write access to the database would after rewriting them.
func rehash(recs []AuditRecord, from int) {
	for i := from; i < len(recs); i++ {
		if i > 0 {
			recs[i].PrevHash = recs[i-1].Hash
		}
		recs[i].Hash = recs[i].ChainHash()
	}
}

func kinds(breaks []ChainBreak) []BreakKind {
	var out []BreakKind
	for _, b := range breaks {
		out = append(out, b.Kind)
	}
	return out
}

func TestVerifyChainReportsEveryBreak(t *testing.T) {
	tests := []struct {
		name   string
		tamper func([]AuditRecord) []AuditRecord
		want   []BreakKind
		seqs   []int64
	}{
		{"intact", func(r []AuditRecord) []AuditRecord { return r }, nil, nil},
		{"edited field", func(r []AuditRecord) []AuditRecord { r[2].Status = 403; return r }, []BreakKind{BreakEdited}, []int64{3}},
		{"edited role", func(r []AuditRecord) []AuditRecord { r[1].Roles = []Role{RoleAdmin}; return r }, []BreakKind{BreakEdited}, []int64{2}},
		{"edited client", func(r []AuditRecord) []AuditRecord { r[1].Client = "10.0.0.1"; return r }, []BreakKind{BreakEdited}, []int64{2}},
		{"removed record", func(r []AuditRecord) []AuditRecord { return append(r[:1], r[2:]...) }, []BreakKind{BreakDeleted}, []int64{2}},
		{"removed first", func(r []AuditRecord) []AuditRecord { return r[1:] }, []BreakKind{BreakDeleted}, []int64{1}},
		{"reordered", func(r []AuditRecord) []AuditRecord { r[0], r[1] = r[1], r[0]; return r },
			[]BreakKind{BreakDeleted, BreakLink, BreakLink}, []int64{1, 1, 3}},
		{"rewritten with recomputed hash", func(r []AuditRecord) []AuditRecord { r[1].Subject = "x"; r[1].Hash = r[1].ChainHash(); return r },
			[]BreakKind{BreakLink}, []int64{3}},
		{"two edits and a deletion: all reported", func(r []AuditRecord) []AuditRecord {
			r[0].Reason, r[5].Path = "forged", "/forged"
			return append(r[:2], r[3:]...)
		}, []BreakKind{BreakEdited, BreakDeleted, BreakEdited}, []int64{1, 3, 6}},
		{"empty", func([]AuditRecord) []AuditRecord { return nil }, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			br := VerifyChain(GenesisHash, tt.tamper(chain(8)))
			var seqs []int64
			for _, b := range br {
				seqs = append(seqs, b.Seq)
			}
			if !slices.Equal(kinds(br), tt.want) || !slices.Equal(seqs, tt.seqs) {
				t.Errorf("breaks = %+v, want kinds %v at %v", br, tt.want, tt.seqs)
			}
		})
	}
}

func TestChainHashSeparatesFields(t *testing.T) {
	for _, v := range []int{AuditV1, AuditV2} {
		a := AuditRecord{Version: v, Subject: "ab", Path: "c"}
		b := AuditRecord{Version: v, Subject: "a", Path: "bc"}
		if a.ChainHash() == b.ChainHash() {
			t.Errorf("v%d: records differing only in field boundaries hash alike", v)
		}
	}
	a := AuditRecord{Version: AuditV2, Roles: []Role{"A,B"}}
	b := AuditRecord{Version: AuditV2, Roles: []Role{"A", "B"}}
	if a.ChainHash() == b.ChainHash() {
		t.Log("roles are hashed comma-joined, as stored: a role holding a comma is not a valid role name")
	}
}

// TestV1RecordsStillVerify: records hashed before v2 (migrated rows) keep
// verifying, and a v2 chain may follow them.
func TestV1RecordsStillVerify(t *testing.T) {
	r := AuditRecord{Version: AuditV1, Seq: 1, Time: time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC), RequestID: "r", Subject: "s",
		Roles: []Role{RoleUser}, Method: "GET", Path: "/p", Decision: AuditAllow, Reason: "ok", Status: 200, PrevHash: GenesisHash}
	// The hash ChainHash(GenesisHash) gave before v2 existed, for exactly
	// these fields (computed with that code).
	const v1 = "5beaf17b085258f77b01736b2fd6e05dd98c598fefa8c4d4100e4d3af42d45cc"
	if r.Hash = r.ChainHash(); r.Hash != v1 {
		t.Fatalf("v1 hash = %s, want %s", r.Hash, v1)
	}
	next := AuditRecord{Time: r.Time, Subject: "t", Decision: AuditDeny, Status: 401}
	next.Seal(2, r.Hash)
	if br := VerifyChain(GenesisHash, []AuditRecord{r, next}); br != nil {
		t.Errorf("v1 then v2 chain: breaks %+v", br)
	}
	r.Version = AuditV2 // a version flip is an edit
	if br := VerifyChain(GenesisHash, []AuditRecord{r, next}); !slices.Equal(kinds(br), []BreakKind{BreakEdited}) {
		t.Errorf("after flipping the version: breaks %+v, want one edit", br)
	}
}

func TestSealEscapesAndBounds(t *testing.T) {
	roles := []Role{RoleUser, "bad\x00role"}
	r := AuditRecord{Path: "/\xff\xfe\xc3", RequestID: "a\\b", Subject: string(make([]byte, 5000)), Roles: roles, Reason: "line\nbreak"}
	r.Seal(1, GenesisHash)
	if r.Path != `/\xff\xfe\xc3` || r.RequestID != `a\\b` || r.Reason != `line\x0abreak` || r.Roles[1] != `bad\x00role` {
		t.Errorf("sealed = %+v", r)
	}
	if roles[1] != "bad\x00role" {
		t.Errorf("Seal changed the caller's roles slice: %q", roles[1])
	}
	if len(r.Subject) > AuditFieldMax {
		t.Errorf("subject of 5000 NULs sealed to %d bytes, want at most %d", len(r.Subject), AuditFieldMax)
	}
	if r.Version != AuditV2 || r.Hash != r.ChainHash() {
		t.Errorf("version %d, hash %s, want v2 and the computed hash", r.Version, r.Hash)
	}
}

func TestCheckpoints(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	otherPub, otherPriv, _ := ed25519.GenerateKey(nil)
	keys := map[string]ed25519.PublicKey{AuditKeyID(pub): pub}
	recs := chain(10)
	sign := func(seq int64, prev string, key ed25519.PrivateKey) AuditCheckpoint {
		cp := AuditCheckpoint{Seq: seq, Hash: recs[seq-1].Hash, Time: time.Unix(int64(seq), 0), Prev: prev}
		cp.Sign(key)
		return cp
	}
	cp4 := sign(4, "", priv)
	cp8 := sign(8, cp4.Digest(), priv)
	cp10 := sign(10, cp8.Digest(), priv)

	t.Run("valid chain anchors", func(t *testing.T) {
		valid, br := VerifyCheckpoints([]AuditCheckpoint{cp4, cp8, cp10}, keys, "", true)
		if len(valid) != 3 || br != nil {
			t.Fatalf("valid %d, breaks %+v", len(valid), br)
		}
	})
	tests := []struct {
		name string
		cps  []AuditCheckpoint
		keys map[string]ed25519.PublicKey
		want []BreakKind
	}{
		{"forged hash", []AuditCheckpoint{cp4, func() AuditCheckpoint { c := cp8; c.Hash = recs[0].Hash; return c }()}, keys,
			[]BreakKind{BreakCheckpointInvalid}},
		{"unknown key", []AuditCheckpoint{sign(4, "", otherPriv)}, keys, []BreakKind{BreakCheckpointInvalid}},
		{"other key given", []AuditCheckpoint{sign(4, "", otherPriv)}, map[string]ed25519.PublicKey{AuditKeyID(otherPub): otherPub}, nil},
		{"deleted checkpoint", []AuditCheckpoint{cp4, cp10}, keys, []BreakKind{BreakCheckpointMissing}},
		{"first deleted", []AuditCheckpoint{cp8, cp10}, keys, []BreakKind{BreakCheckpointMissing}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, br := VerifyCheckpoints(tt.cps, tt.keys, "", true)
			if !slices.Equal(kinds(br), tt.want) {
				t.Errorf("breaks = %+v, want %v", br, tt.want)
			}
		})
	}

	verify := func(recs []AuditRecord) []ChainBreak {
		v := NewChainVerifier(Genesis, []AuditCheckpoint{cp4, cp8, cp10}, 100)
		for _, r := range recs {
			v.Add(r)
		}
		rep := v.Finish(true)
		return rep.Breaks
	}
	t.Run("truncated tail", func(t *testing.T) {
		br := verify(chain(10)[:7])
		if !slices.Equal(kinds(br), []BreakKind{BreakTruncated}) || br[0].Seq != 8 || br[0].Last != 10 {
			t.Errorf("breaks = %+v, want truncated 8..10", br)
		}
	})
	t.Run("tail rewritten with recomputed hashes", func(t *testing.T) {
		r := chain(10)
		r[5].Reason = "forged"
		rehash(r, 5)
		if br := VerifyChain(GenesisHash, r); br != nil {
			t.Fatalf("the rewrite should hold as a chain, got %+v", br)
		}
		br := verify(r)
		if !slices.Equal(kinds(br), []BreakKind{BreakRewritten, BreakRewritten}) || br[0].Seq != 8 {
			t.Errorf("breaks = %+v, want rewritten at 8 and 10", br)
		}
	})
	t.Run("cap keeps the count", func(t *testing.T) {
		r := chain(10)
		for i := range r {
			r[i].Reason = "x"
		}
		v := NewChainVerifier(Genesis, nil, 3)
		for _, rec := range r {
			v.Add(rec)
		}
		rep := v.Finish(true)
		if len(rep.Breaks) != 3 || rep.BreakCount != 10 || rep.OK() {
			t.Errorf("kept %d of %d breaks, want 3 of 10", len(rep.Breaks), rep.BreakCount)
		}
	})
}

// TestChainVerifierResumesAtMissingRecord: a step resumed at a record
// that is missing (the step before reported it) reports what is missing
// after it, never that record again; MissingThrough reports the records up
// to a bound that no record follows, and the step ends there.
func TestChainVerifierResumesAtMissingRecord(t *testing.T) {
	recs := chain(10)
	present := func(seqs ...int64) []AuditRecord {
		var out []AuditRecord
		for _, s := range seqs {
			out = append(out, recs[s-1])
		}
		return out
	}
	cp10 := AuditCheckpoint{Seq: 10, Hash: recs[9].Hash}
	tests := []struct {
		name    string
		from    int64
		recs    []AuditRecord
		through int64 // 0: no MissingThrough
		atHead  bool
		want    []string
		checked int64
	}{
		{"the anchor is there", 4, present(4, 5, 6), 0, false, nil, 2},
		{"the anchor is missing, the next is there", 4, present(5, 6), 0, false, nil, 2},
		{"the anchor and more are missing", 4, present(7, 8), 0, false, []string{"deleted 5-6"}, 2},
		{"missing through a bound", 4, present(4, 5), 8, false, []string{"deleted 6-8"}, 1},
		{"nothing up to the bound", 4, nil, 8, false, []string{"deleted 5-8"}, 0},
		{"the bound is the last record", 4, present(4, 5), 5, false, nil, 1},
		{"truncated after a missing anchor", 7, nil, 0, true, []string{"truncated 8-10"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewChainVerifier(ChainStart{Next: tt.from, Resume: true}, []AuditCheckpoint{cp10}, 10)
			for _, r := range tt.recs {
				v.Add(r)
			}
			if tt.through > 0 {
				v.MissingThrough(tt.through)
			}
			rep := v.Finish(tt.atHead)
			var got []string
			for _, b := range rep.Breaks {
				got = append(got, fmt.Sprintf("%s %d-%d", b.Kind, b.Seq, b.Last))
			}
			if !slices.Equal(got, tt.want) || rep.Checked != tt.checked {
				t.Errorf("breaks %v, checked %d; want %v, %d", got, rep.Checked, tt.want, tt.checked)
			}
		})
	}
}

// BenchmarkSeal is the cost the canonical form adds per record (escape
// check, bounds, hash): a typical record needs no escaping.
func BenchmarkSeal(b *testing.B) {
	roles := []Role{RoleUser}
	for _, bc := range []struct{ name, path string }{
		{"typical", "/api/v2/sessions?limit=50"},
		{"raw bytes", "/\xff\xfe\xc3/x\x00y"},
		{"30KB path", "/" + string(make([]byte, 30_000))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := AuditRecord{Time: time.Now(), RequestID: "0123456789abcdef01234567", Subject: "apikey:16f18b003772", Roles: roles,
					AuthMethod: MethodAPIKey, Method: "GET", Path: bc.path, Client: "127.0.0.1", Decision: AuditAllow,
					Reason: "role USER grants sessions:read", Status: 200}
				r.Seal(42, GenesisHash)
			}
		})
	}
}

// BenchmarkHashV1 is the hash the records had before, for comparison.
func BenchmarkHashV1(b *testing.B) {
	r := AuditRecord{Version: AuditV1, Time: time.Now(), RequestID: "0123456789abcdef01234567", Subject: "apikey:16f18b003772",
		Roles: []Role{RoleUser}, AuthMethod: MethodAPIKey, Method: "GET", Path: "/api/v2/sessions?limit=50", Decision: AuditAllow,
		Reason: "role USER grants sessions:read", Status: 200, PrevHash: GenesisHash}
	b.ReportAllocs()
	for b.Loop() {
		_ = r.ChainHash()
	}
}
