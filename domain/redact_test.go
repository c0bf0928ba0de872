package domain

import (
	"net/url"
	"strings"
	"testing"
)

var redactKey = []byte("0123456789abcdef0123456789abcdef")

func TestTargetRedactor(t *testing.T) {
	r, err := NewTargetRedactor(redactKey, []string{"api_key"})
	if err != nil {
		t.Fatal(err)
	}
	mark := func(value string) string {
		return strings.TrimPrefix(r.Redact([]byte("/x?access_token="+value)), "/x?access_token=")
	}
	tests := []struct {
		name, target, want string
	}{
		{"no query", "/api/v2/me", "/api/v2/me"},
		{"no credential", "/api/v2/audit?limit=5&subject=u", "/api/v2/audit?limit=5&subject=u"},
		{"bearer token", "/x?access_token=abc&limit=5", "/x?access_token=" + mark("abc") + "&limit=5"},
		{"encoded name", "/x?access%5Ftoken=abc", "/x?access%5Ftoken=" + mark("abc")},
		{"other case", "/x?Access_Token=abc", "/x?Access_Token=" + mark("abc")},
		{"encoded value", "/x?access_token=a%62c", "/x?access_token=" + mark("abc")},
		{"semicolon", "/x?a=1;access_token=abc", "/x?a=1;access_token=" + mark("abc")},
		{"repeated", "/x?code=abc&code=abc", "/x?code=" + mark("abc") + "&code=" + mark("abc")},
		{"operator's name", "/x?API_KEY=abc", "/x?API_KEY=" + mark("abc")},
		{"empty value", "/x?code=&token", "/x?code=&token"},
		{"value looks like a name", "/x?state=code", "/x?state=code"},
		{"no name", "/x?=abc&&", "/x?=abc&&"},
	}
	for _, tt := range tests {
		if got := r.Redact([]byte(tt.target)); got != tt.want {
			t.Errorf("%s: Redact(%q) = %q, want %q", tt.name, tt.target, got, tt.want)
		}
	}
	if m := mark("abc"); !strings.HasPrefix(m, RedactedMarker) || !strings.HasSuffix(m, "]") || m == mark("abd") {
		t.Errorf("marker %q: want %s…], unlike another value's %q", m, RedactedMarker, mark("abd"))
	}
	other, _ := NewTargetRedactor([]byte("another key, another key, 32 byt"), nil)
	if a, b := r.Redact([]byte("/x?code=abc")), other.Redact([]byte("/x?code=abc")); a == b {
		t.Errorf("two keys give one marker %q: want the hash keyed", a)
	}
	for _, bad := range []struct {
		key   []byte
		names []string
	}{{[]byte("short"), nil}, {redactKey, []string{" "}}} {
		if _, err := NewTargetRedactor(bad.key, bad.names); err == nil {
			t.Errorf("NewTargetRedactor(%q, %q): want an error", bad.key, bad.names)
		}
	}
}

// FuzzTargetRedactor: whatever the target, a credential appended to it
// (its name spelled as fuzzed) is gone from the result as net/url reads
// it, its marker in its place; and a target without a credential name is
// kept byte for byte.
func FuzzTargetRedactor(f *testing.F) {
	f.Add("/api/v2/me?limit=5", "access_token", "eyJhbGciOiJFZERTQSJ9.e30.c2ln")
	f.Add("/auth/callback?state=s", "CODE", "x%2By")
	f.Add("/x?a=1;b", "subject%5Ftoken", "tok;en")
	f.Add("/x", "client_secret", "p+w%")
	r, err := NewTargetRedactor(redactKey, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, target, name, secret string) {
		if !strings.Contains(target, "?") {
			if got := r.Redact([]byte(target)); got != target {
				t.Fatalf("Redact(%q) = %q: want a target without a query kept", target, got)
			}
			target += "?"
		}
		decoded, err := url.QueryUnescape(name)
		if err != nil || !r.isCredential(decoded) || strings.ContainsAny(name, "&;=#") || strings.ContainsAny(secret, "&;#") || secret == "" {
			return
		}
		got := r.Redact([]byte(target + "&" + name + "=" + secret))
		q, err := url.ParseQuery(strings.ReplaceAll(got[strings.IndexByte(got, '?')+1:], ";", "&"))
		if err != nil {
			return // net/url refuses what fasthttp reads leniently; the unit test covers those
		}
		for k, vs := range q {
			if !r.isCredential(k) {
				continue
			}
			for _, v := range vs {
				if v != "" && !strings.HasPrefix(v, RedactedMarker) {
					t.Fatalf("Redact(%q) = %q: credential %s=%q left", target+"&"+name+"="+secret, got, k, v)
				}
			}
		}
	})
}

// BenchmarkTargetRedactor: the cost per request of the rule, for a target
// without a query (most requests), with one and no credential, and with a
// token in it.
func BenchmarkTargetRedactor(b *testing.B) {
	r, err := NewTargetRedactor(redactKey, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, bm := range []struct{ name, target string }{
		{"no query", "/api/v2/sessions/ses_0123456789abcdef/tool-calls"},
		{"query without credential", "/api/v2/audit?limit=100&subject=uma&decision=deny"},
		{"access token", "/api/v2/me?access_token=eyJhbGciOiJFZERTQSIsImtpZCI6ImsxIiwidHlwIjoiYXQrand0In0.eyJzdWIiOiJ1bWEifQ.c2lnbmF0dXJl"},
	} {
		target := []byte(bm.target)
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = r.Redact(target)
			}
		})
	}
}
