package auditjson_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/adapters/auditjson"
	"github.com/agentauth/agentauth/domain"
)

// TestReadCheckpointsEveryForm: the API's answer, NDJSON and the service's
// log (among other lines) all read back as the same checkpoints.
func TestReadCheckpointsEveryForm(t *testing.T) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	var cps []domain.AuditCheckpoint
	prev := ""
	for _, seq := range []int64{5, 10} {
		cp := domain.AuditCheckpoint{Seq: seq, Hash: strings.Repeat("a", 64), Time: time.Unix(seq, 123456000), Prev: prev}
		cp.Sign(key)
		cps, prev = append(cps, cp), cp.Digest()
	}
	enc := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	api := enc(map[string]any{"checkpoints": []auditjson.Checkpoint{auditjson.FromCheckpoint(cps[0]), auditjson.FromCheckpoint(cps[1])}, "next_cursor": nil})
	ndjson := enc(auditjson.FromCheckpoint(cps[0])) + "\n" + enc(auditjson.FromCheckpoint(cps[1])) + "\n"
	logLines := `{"level":"info","msg":"request","path":"/x"}` + "\nplain text line\n" +
		enc(auditjson.LogLine{Level: "info", Msg: auditjson.LogMessage, Checkpoint: auditjson.FromCheckpoint(cps[0])}) + "\n" +
		enc(auditjson.LogLine{Level: "info", Msg: auditjson.LogMessage, Checkpoint: auditjson.FromCheckpoint(cps[1])}) + "\n"
	for name, text := range map[string]string{"api answer": api, "ndjson": ndjson, "log": logLines} {
		t.Run(name, func(t *testing.T) {
			got, err := auditjson.ReadCheckpoints(strings.NewReader(text))
			if err != nil || len(got) != 2 || got[0] != cps[0] || got[1] != cps[1] {
				t.Errorf("ReadCheckpoints = %+v, %v; want %+v", got, err, cps)
			}
		})
	}
	if _, err := auditjson.ReadCheckpoints(strings.NewReader("{broken\n")); err == nil {
		t.Error("a broken JSON line was accepted")
	}
}

// TestRecordRoundTrip: a sealed record survives JSON byte for byte, so an
// export verifies.
func TestRecordRoundTrip(t *testing.T) {
	r := domain.AuditRecord{Time: time.Now(), RequestID: "r\xff", Subject: "s", Roles: []domain.Role{domain.RoleUser},
		Method: "GET", Path: "/\x00<script>&", Client: "::1", Decision: domain.AuditDeny, Reason: `a\b`, Status: 401}
	r.Seal(1, domain.GenesisHash)
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(auditjson.FromRecord(r)); err != nil {
		t.Fatal(err)
	}
	var got []domain.AuditRecord
	if err := auditjson.ReadRecords(&buf, func(r domain.AuditRecord) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || domain.VerifyChain(domain.GenesisHash, got) != nil || got[0].Path != r.Path {
		t.Errorf("read back %+v, want the sealed record, verifying", got)
	}
}
