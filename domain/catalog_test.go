package domain_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/domain"
)

func TestValidateCredentialName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"", true},
		{"github-token", true},
		{"fs.token_2", true},
		{"../etc/passwd", false},
		{"a/b", false},
		{".hidden", false},
		{"c:token", false},
		{"tok en", false},
		{string(make([]byte, 129)), false},
	}
	for _, tt := range tests {
		err := domain.ValidateCredentialName(tt.name)
		if got := err == nil; got != tt.ok || (err != nil && !errors.Is(err, domain.ErrInvalidInput)) {
			t.Errorf("ValidateCredentialName(%q) = %v; want ok %t", tt.name, err, tt.ok)
		}
	}
}

// TestToolDescriptionOf: a server's description is kept as text a tool may
// hold (ValidateToolDescription accepts it): control characters out, cut at
// a character's end over the bound, saying so.
func TestToolDescriptionOf(t *testing.T) {
	long := strings.Repeat("é", domain.MaxToolDescription) // 2 bytes each
	tests := []struct{ in, want string }{
		{"Reads a file.\n\tPath: absolute.", "Reads a file.\n\tPath: absolute."},
		{"bell\a and \x1b[31mred\x7f", "bell and [31mred"},
		{"bad \xff byte", "bad \uFFFD byte"},
		{strings.Repeat("x", domain.MaxToolDescription), strings.Repeat("x", domain.MaxToolDescription)},
		{long, strings.Repeat("é", (domain.MaxToolDescription-len("… (cut)"))/2) + "… (cut)"},
	}
	for _, tt := range tests {
		got := domain.ToolDescriptionOf(tt.in)
		if got != tt.want || domain.ValidateToolDescription(got) != nil {
			t.Errorf("domain.ToolDescriptionOf(%.40q) = %.60q (%d bytes, %v), want %.60q", tt.in, got, len(got), domain.ValidateToolDescription(got), tt.want)
		}
	}
}
