package domain_test

import (
	"errors"
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
