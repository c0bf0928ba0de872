package hybrid

import (
	"crypto/sha256"
	"testing"

	"github.com/agentauth/agentauth/ports"
)

func TestKeyOfHashesTheCredential(t *testing.T) {
	bearer := ports.Credential{Kind: ports.CredentialBearer, Value: "s3cret-token-value"}
	cookie := ports.Credential{Kind: ports.CredentialCookie, Value: "s3cret-token-value"}
	other := ports.Credential{Kind: ports.CredentialBearer, Value: "s3cret-token-valuf"}

	k := keyOf(bearer)
	if got, want := k.digest, sha256.Sum256([]byte(bearer.Value)); got != want {
		t.Errorf("digest: got %x, want the SHA-256 of the value %x", got, want)
	}
	tests := []struct {
		name     string
		a, b     ports.Credential
		wantSame bool
	}{
		{"same credential", bearer, bearer, true},
		{"same value, other carrier", bearer, cookie, false},
		{"other value", bearer, other, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keyOf(tt.a) == keyOf(tt.b); got != tt.wantSame {
				t.Errorf("keys equal: got %v, want %v", got, tt.wantSame)
			}
		})
	}
}
