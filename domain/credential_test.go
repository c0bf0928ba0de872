package domain

import "testing"

func TestIsBearerToken(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"abc", true},
		{"aZ09-._~+/", true},
		{"eyJhbGciOi.eyJzdWIi.sig", true},
		{"abc==", true},
		{"", false},
		{"=", false},
		{"=abc", false},
		{"ab=c", false},
		{"abc ", false},
		{"a b", false},
		{"abc\u00a0", false},
		{"abc\t", false},
		{`"abc"`, false},
		{"abc,def", false},
		{"abé", false},
	}
	for _, tt := range tests {
		if got := IsBearerToken(tt.in); got != tt.want {
			t.Errorf("IsBearerToken(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
