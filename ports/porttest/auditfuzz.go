package porttest

import (
	"context"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// FuzzAuditStore appends records whose caller-chosen fields (request
// target, request id, method, client, username in a reason, subject) hold
// the fuzzer's bytes, and checks after every append that the store kept
// exactly the sealed record and that the chain still verifies from the
// previous head. It runs the seeds as a plain test too.
func FuzzAuditStore(f *testing.F, st ports.AuditStore) {
	for _, seed := range [][3]string{
		{"/\xff\xfe\xc3", "", ""},
		{"/api/v2/sessions?x=\x00", "req\\id", "10.0.0.1"},
		{"/" + string(make([]byte, 5000)), "\xed\xa0\x80", "\x7f"},
		{`\x41\\`, "\n\r\t", "é\xc3"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	var (
		after int64
		prev  = domain.GenesisHash
	)
	f.Fuzz(func(t *testing.T, target, requestID, other string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// Roles are stored and hashed comma-joined, so only the joined
		// text must come back.
		rec := domain.AuditRecord{Time: time.Now(), RequestID: requestID, Subject: other, Roles: []domain.Role{domain.Role(other)},
			AuthMethod: domain.MethodAPIKey, Method: other, Path: target, Client: other, Decision: domain.AuditDeny,
			Reason: "login refused for username " + other + " at " + target, Status: 401}
		batch := []domain.AuditRecord{rec}
		if err := st.AppendAudit(ctx, batch); err != nil {
			t.Fatalf("AppendAudit(%q, %q, %q): %v", target, requestID, other, err)
		}
		got, err := st.AuditChain(ctx, after, 1000)
		if err != nil {
			t.Fatalf("AuditChain: %v", err)
		}
		if br := domain.VerifyChain(prev, got); br != nil || len(got) != 1 {
			t.Fatalf("after appending (%q, %q, %q): %d new records, breaks %+v", target, requestID, other, len(got), br)
		}
		g, w := got[0], batch[0]
		if g.Hash != w.Hash || g.Path != w.Path || g.RequestID != w.RequestID || g.Method != w.Method || g.Client != w.Client ||
			g.Subject != w.Subject || g.Reason != w.Reason || domain.JoinRoles(g.Roles) != domain.JoinRoles(w.Roles) {
			t.Fatalf("stored %+v, want the sealed %+v", g, w)
		}
		after, prev = g.Seq, g.Hash
	})
}
