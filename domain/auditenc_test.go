package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscapeAuditText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"/api/v2/sessions?limit=5", "/api/v2/sessions?limit=5"},
		{"ünïcode ✓ \U0001F600", "ünïcode ✓ \U0001F600"},
		{`back\slash`, `back\\slash`},
		{"/\xff\xfe\xc3", `/\xff\xfe\xc3`},
		{"nul\x00tab\tdel\x7f", `nul\x00tab\x09del\x7f`},
		{"\xe2\x82", `\xe2\x82`},         // a cut multi-byte character
		{"\xef\xbf\xbd", "\xef\xbf\xbd"}, // U+FFFD itself is valid text
		{`\x41`, `\\x41`},                // looks like an escape: escaped again
		{"\xed\xa0\x80", `\xed\xa0\x80`}, // a UTF-16 surrogate is not UTF-8
	}
	for _, tt := range tests {
		got := EscapeAuditText(tt.in)
		if got != tt.want {
			t.Errorf("EscapeAuditText(%q) = %q, want %q", tt.in, got, tt.want)
		}
		back, err := UnescapeAuditText(got)
		if err != nil || back.Text != tt.in || back.Truncated {
			t.Errorf("UnescapeAuditText(%q) = %+v, %v; want %q", got, back, err, tt.in)
		}
	}
}

func TestEscapeAuditTextDoesNotAllocateForCleanText(t *testing.T) {
	s := strings.Repeat("/api/v2/sessions/abc?x=1 ", 40)
	if n := testing.AllocsPerRun(100, func() { _ = EscapeAuditText(s); _ = BoundAuditText(s[:500]) }); n != 0 {
		t.Errorf("escaping clean text allocates %.0f times, want 0", n)
	}
}

func TestBoundAuditText(t *testing.T) {
	long := strings.Repeat("a", 30_000)
	tests := []struct {
		name      string
		in        string
		truncated bool
	}{
		{"short", "/p", false},
		{"exactly the bound", strings.Repeat("b", AuditFieldMax), false},
		{"one over", strings.Repeat("b", AuditFieldMax+1), true},
		{"30 KB path", "/" + long, true},
		{"escapes grow it past the bound", strings.Repeat("\xff", 600), true},
		{"escapes that fit", strings.Repeat("\xff", 512), false},
		{"multi-byte characters at the cut", strings.Repeat("€", 1000), true},
		{"escapes at the cut", strings.Repeat("a\x00", 1000), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BoundAuditText(tt.in)
			if len(got) > AuditFieldMax {
				t.Fatalf("bounded to %d bytes, want at most %d", len(got), AuditFieldMax)
			}
			if !utf8.ValidString(got) {
				t.Fatalf("bounded text is not valid UTF-8: %q", got)
			}
			back, err := UnescapeAuditText(got)
			if err != nil {
				t.Fatalf("UnescapeAuditText: %v", err)
			}
			if back.Truncated != tt.truncated {
				t.Fatalf("truncated = %v, want %v (%d bytes)", back.Truncated, tt.truncated, len(got))
			}
			if !tt.truncated {
				if back.Text != tt.in {
					t.Errorf("round trip lost text")
				}
				return
			}
			sum := sha256.Sum256([]byte(tt.in))
			if back.OriginalLen != int64(len(tt.in)) || back.OriginalSHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("marker = %d bytes %s, want %d bytes %x", back.OriginalLen, back.OriginalSHA256, len(tt.in), sum)
			}
			if !strings.HasPrefix(tt.in, back.Text) || len(back.Text) < AuditFieldMax/4-truncMarkerMax {
				t.Errorf("kept %d bytes that are not a prefix of the original (or too few)", len(back.Text))
			}
		})
	}
}

func TestUnescapeAuditTextRefusesForeignText(t *testing.T) {
	for _, s := range []string{`\`, `\q`, `\xzz`, `\x4`, `\[truncated 5 bytes sha256:abc]`, `\[truncated x bytes sha256:` + strings.Repeat("0", 64) + `]`} {
		if _, err := UnescapeAuditText(s); err == nil {
			t.Errorf("UnescapeAuditText(%q) succeeded, want an error", s)
		}
	}
}

// FuzzAuditText: any bytes escape to valid UTF-8 without control
// characters, bounded, and come back.
func FuzzAuditText(f *testing.F) {
	for _, s := range []string{"", "/\xff\xfe\xc3", `\\x00`, "a\x00b", strings.Repeat("€\xff", 700)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		esc := EscapeAuditText(s)
		if !utf8.ValidString(esc) || strings.ContainsFunc(esc, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("EscapeAuditText(%q) = %q: not clean text", s, esc)
		}
		if back, err := UnescapeAuditText(esc); err != nil || back.Text != s {
			t.Fatalf("round trip of %q: %+v, %v", s, back, err)
		}
		b := BoundAuditText(s)
		if len(b) > AuditFieldMax || !utf8.ValidString(b) {
			t.Fatalf("BoundAuditText(%q) = %d bytes", s, len(b))
		}
		back, err := UnescapeAuditText(b)
		if err != nil || !strings.HasPrefix(s, back.Text) || (!back.Truncated && back.Text != s) {
			t.Fatalf("bounded round trip of %q: %+v, %v", s, back, err)
		}
	})
}

// firstToEscapeByByte is the rule's definition, a byte at a time.
func firstToEscapeByByte(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f || c == '\\' {
				return i
			}
			i++
			continue
		}
		if r, n := utf8.DecodeRuneInString(s[i:]); r == utf8.RuneError && n == 1 {
			return i
		} else {
			i += n
		}
	}
	return len(s)
}

func TestFirstToEscapeMatchesTheRuleByteByByte(t *testing.T) {
	tests := []string{"", "a", "/api/v2/sessions?limit=20", "0123456789abcdef0123456789",
		"exactly8", "exactly8\\", "\\exactly8", "sixteen bytes!!!\x7f", "sixteen bytes!!!\x1f", "sixteen bytes!!!\x80",
		"ok ok ok ok \x00", "ok ok ok ok \xff\xfe", "héllo wörld, plain after", "ok ok ok ok 日本語 and more text",
		"~~~~~~~~ ~~~~~~~~", "        \x20\x1f       ", "\x7e\x7e\x7e\x7e\x7e\x7e\x7e\x7e\x7f"}
	for b := 0; b < 256; b++ { // every byte in every lane
		for lane := range 8 {
			s := []byte("abcdefghijklmnop")
			s[lane] = byte(b)
			tests = append(tests, string(s))
		}
	}
	for _, s := range tests {
		if got, want := firstToEscape(s), firstToEscapeByByte(s); got != want {
			t.Errorf("firstToEscape(%q) = %d, want %d", s, got, want)
		}
	}
}
