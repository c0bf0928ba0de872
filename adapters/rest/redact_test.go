package rest_test

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentauth/agentauth/domain"
)

// TestNoCredentialInRecords: a credential sent in the query string (every
// name of domain.CredentialParams, one an operator added, spelled in
// another case or percent-encoded) reaches neither the audit record nor
// the access log line; each is replaced by a marker with a keyed hash, so
// that one value sent twice shows the same marker and another value
// another; other parameters are kept as sent, and the chain's hashes cover
// what is stored.
func TestNoCredentialInRecords(t *testing.T) {
	redactor, err := domain.NewTargetRedactor([]byte("test-redaction-key-0123456789abcdef"), []string{"X-Api-Secret"})
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	h := start(t, options{log: zap.New(core), redactor: redactor})
	type sent struct {
		target, secret string
	}
	var cases []sent
	for _, name := range append(domain.CredentialParams(), "x-api-secret", "ACCESS_TOKEN", "access%5Ftoken", "Code") {
		secret := "s3cr3t-" + strings.ReplaceAll(name, "%", "") + "-value"
		cases = append(cases, sent{"/api/v2/me?keep=1&" + name + "=" + secret + "&after=2", secret})
	}
	cases = append(cases, sent{"/nope?token=eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ1In0.c2ln", "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ1In0.c2ln"})
	ids := map[string]sent{}
	for _, c := range cases {
		r := h.do(t, "GET", c.target, bearer(keyUser), "")
		ids[r.header.Get("X-Request-ID")] = c
	}
	// The same access token twice, and another one.
	markerOf := func(target string) string {
		r := h.do(t, "GET", target, bearer(keyUser), "")
		id := r.header.Get("X-Request-ID")
		for _, e := range logs.FilterMessage("request").AllUntimed() {
			if e.ContextMap()["request_id"] == id {
				p, _ := e.ContextMap()["path"].(string)
				return p
			}
		}
		t.Fatalf("no access log line for %s", target)
		return ""
	}
	first, again, other := markerOf("/api/v2/me?access_token=same-value-1"), markerOf("/api/v2/me?access_token=same-value-1"), markerOf("/api/v2/me?access_token=other-value")
	if first != again || first == other || !strings.Contains(first, "access_token="+domain.RedactedMarker) {
		t.Errorf("markers of one value twice and another: %q, %q, %q: want the first two equal, the third different", first, again, other)
	}

	recs, err := h.store.AuditChain(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, rec := range recs {
		if got := rec.ChainHash(); got != rec.Hash {
			t.Errorf("record %d: stored hash %s, computed over what is stored %s", rec.Seq, rec.Hash, got)
		}
		c, ok := ids[rec.RequestID]
		if !ok {
			continue
		}
		found++
		if strings.Contains(rec.Path, c.secret) || !strings.Contains(rec.Path, "="+domain.RedactedMarker) {
			t.Errorf("audit path of %s = %q: want the credential replaced by a marker", c.target, rec.Path)
		}
		if strings.HasPrefix(c.target, "/api/v2/me") && (!strings.HasPrefix(rec.Path, "/api/v2/me?keep=1&") || !strings.HasSuffix(rec.Path, "&after=2")) {
			t.Errorf("audit path of %s = %q: want the other parameters kept as sent", c.target, rec.Path)
		}
	}
	if found != len(cases) {
		t.Errorf("found %d of %d records", found, len(cases))
	}
	for _, e := range logs.FilterMessage("request").AllUntimed() {
		c, ok := ids[e.ContextMap()["request_id"].(string)]
		if !ok {
			continue
		}
		if p, _ := e.ContextMap()["path"].(string); strings.Contains(p, c.secret) || !strings.Contains(p, "="+domain.RedactedMarker) {
			t.Errorf("access log path of %s = %q: want the request target as the audit record has it", c.target, p)
		}
	}
}
