package domain

import (
	"strings"
	"testing"
)

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

// BenchmarkIsBearerToken checks a Keycloak-sized access token, as every
// Bearer request does.
func BenchmarkIsBearerToken(b *testing.B) {
	tok := strings.Repeat("eyJhbGciOiJSUzI1NiIsInR5cCIgOiAiSldUIiwia2lkIiA6ICJ", 16) + "." + strings.Repeat("x-_", 100)
	for b.Loop() {
		if !IsBearerToken(tok) {
			b.Fatal("refused")
		}
	}
}

func TestLooksLikeJWT(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"eyJhbGciOi.eyJzdWIi.sig", true},
		{"a.b.c", true},
		{"eyJhbGciOi.eyJzdWIi.", true}, // an unsecured JWS still has the shape; the verifier refuses it
		{"static-api-key-0123456789", false},
		{"aak_0123456789ab_secret", false},
		{"opaque.token", false},
		{"a.b.c.d.e", false}, // JWE compact: five parts, not accepted as an access token here
		{"", false},
	}
	for _, tt := range tests {
		if got := LooksLikeJWT(tt.in); got != tt.want {
			t.Errorf("LooksLikeJWT(%q): got %v, want %v", tt.in, got, tt.want)
		}
	}
}
