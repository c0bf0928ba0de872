package domain_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentauth/agentauth/domain"
)

// TestPersonNameOf: what a provider says a person is called is kept as a
// printable, bounded label: nothing that reorders or hides text survives.
func TestPersonNameOf(t *testing.T) {
	long := strings.Repeat("é", domain.MaxPersonName) // 2 bytes each
	tests := []struct{ in, want string }{
		{"alice", "alice"},
		{"Alice Liddell", "Alice Liddell"},
		{"alice@example.com", "alice@example.com"},
		{"  Zoë\t\nWong  ", "Zoë Wong"},
		{"Anna\u00a0Bell", "Anna Bell"},        // a no-break space is a space
		{"bob\u202egnp.exe", "bobgnp.exe"},     // right-to-left override
		{"ev\u200bil", "evil"},                 // zero-width space
		{"\u2066admin\u2069", "admin"},         // isolates
		{"mal\x00lory\x1b[31m", "mallory[31m"}, // control characters
		{"bad\xffutf8", "badutf8"},
		{"<script>x</script>", "<script>x</script>"}, // text: the console escapes it
		{"", ""},
		{"\u200f\u200e", ""},
		{long, strings.Repeat("é", (domain.MaxPersonName-len("…"))/2) + "…"},
	}
	for _, tt := range tests {
		got := domain.PersonNameOf(tt.in)
		if got != tt.want {
			t.Errorf("PersonNameOf(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if len(got) > domain.MaxPersonName || !utf8.ValidString(got) {
			t.Errorf("PersonNameOf(%q) = %q: over the bound or not UTF-8", tt.in, got)
		}
	}
}

func TestValidateAgentName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"", true},
		{"notes-agent", true},
		{"Notes agent (prod) #2", true},
		{"Агент заметок", true},
		{"エージェント", true},
		{strings.Repeat("a", domain.MaxAgentName), true},
		{strings.Repeat("a", domain.MaxAgentName+1), false},
		{strings.Repeat("é", domain.MaxAgentName/2+1), false}, // bytes, not characters
		{" leading", false},
		{"trailing ", false},
		{"two\nlines", false},
		{"tab\there", false},
		{"bell\x07", false},
		{"del\x7f", false},
		{"c1\u0085", false},
		{"rtl\u202eoverride", false},
		{"isolate\u2067x", false},
		{"lrm\u200e", false},
		{"zero\u200bwidth", false},
		{"nbsp\u00a0", false},
		{"bad\xff", false},
	}
	for _, tt := range tests {
		err := domain.ValidateAgentName(tt.name)
		if got := err == nil; got != tt.ok || (err != nil && !errors.Is(err, domain.ErrInvalidInput)) {
			t.Errorf("ValidateAgentName(%q) = %v; want ok %t", tt.name, err, tt.ok)
		}
	}
}
