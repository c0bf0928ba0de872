package auditlog

import (
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
)

func TestLogEntriesRoundTripAnyBytes(t *testing.T) {
	tests := []domain.AuditRecord{
		{},
		{Seq: 1, Time: time.UnixMicro(1_700_000_000_123_456).UTC(), RequestID: "r", Subject: "alice", Roles: []domain.Role{"ADMIN", "USER"},
			AuthMethod: "api_key", Method: "GET", Path: "/\xff\xfe\xc3\x00", Client: "10.0.0.1", Version: domain.AuditV2, Decision: domain.AuditDeny, Reason: "why", Status: 403,
			PrevHash: domain.GenesisHash, Hash: "h"},
		{Seq: 1 << 40, Time: time.UnixMicro(-5).UTC(), Path: string(make([]byte, 70000)), Status: -1},
	}
	for _, want := range tests {
		got, err := decode(encode(nil, &want))
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if got.Seq != want.Seq || got.Version != want.Version || got.Client != want.Client || !got.Time.Equal(want.Time.UTC().Truncate(time.Microsecond)) || got.RequestID != want.RequestID ||
			got.Subject != want.Subject || domain.JoinRoles(got.Roles) != domain.JoinRoles(want.Roles) || got.AuthMethod != want.AuthMethod ||
			got.Method != want.Method || got.Path != want.Path || got.Decision != want.Decision || got.Reason != want.Reason ||
			got.Status != want.Status || got.PrevHash != want.PrevHash || got.Hash != want.Hash {
			t.Errorf("round trip of %+v gave %+v", want, got)
		}
	}
	good := encode(nil, &tests[1])
	for _, bad := range [][]byte{nil, {9}, good[:len(good)-1], append(good, 0)} {
		if _, err := decode(bad); err == nil {
			t.Errorf("decode(%q) accepted a malformed entry", bad)
		}
	}
}

// FuzzLogEntry: any field values survive the log entry byte for byte, and
// no input makes decode panic.
func FuzzLogEntry(f *testing.F) {
	f.Add(int64(1), int64(1_700_000_000_000_000), "req", "alice", "ADMIN,USER", "/\xff\x00?q=1", "10.0.0.1", "why", 200, []byte{codecVersion, 2, 4})
	f.Fuzz(func(t *testing.T, seq, micros int64, id, subject, roles, path, client, reason string, status int, raw []byte) {
		want := domain.AuditRecord{Seq: seq, Version: domain.AuditV2, Time: time.UnixMicro(micros).UTC(), RequestID: id, Subject: subject,
			Roles: domain.SplitRoles(roles), AuthMethod: "api_key", Method: "GET", Path: path, Client: client, Decision: domain.AuditAllow,
			Reason: reason, Status: status, PrevHash: domain.GenesisHash, Hash: "h"}
		got, err := decode(encode(nil, &want))
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if got.Seq != want.Seq || !got.Time.Equal(want.Time) || got.RequestID != id || got.Subject != subject ||
			domain.JoinRoles(got.Roles) != domain.JoinRoles(want.Roles) || got.Path != path || got.Client != client ||
			got.Reason != reason || got.Status != status {
			t.Fatalf("round trip changed the record: %+v", got)
		}
		_, _ = decode(raw) // must not panic
	})
}
