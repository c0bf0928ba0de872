package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/domain"
)

// TestSealerRotation: a value sealed under a key opens under that key, and
// under a sealer that took it as a previous key (saying so, so that the
// value is sealed again); not under another key, nor for another row.
func TestSealerRotation(t *testing.T) {
	a, b := []byte(strings.Repeat("a", 32)), []byte(strings.Repeat("b", 32))
	old, err := newSealer("test", a)
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := newSealer("test", b, a)
	if err != nil {
		t.Fatal(err)
	}
	onlyNew, err := newSealer("test", b)
	if err != nil {
		t.Fatal(err)
	}
	sealed := old.seal("refresh-token-value", "row1")
	if !strings.HasPrefix(sealed, sealPrefix) || strings.Contains(sealed, "refresh") {
		t.Fatalf("sealed %q", sealed)
	}
	tests := []struct {
		name         string
		s            *sealer
		v, ad        string
		want         string
		wantPrevious bool
		wantErr      bool
	}{
		{"the key that sealed it", old, sealed, "row1", "refresh-token-value", false, false},
		{"after rotation, as the previous key", rotated, sealed, "row1", "refresh-token-value", true, false},
		{"sealed again after rotation", rotated, rotated.seal("refresh-token-value", "row1"), "row1", "refresh-token-value", false, false},
		{"the previous key dropped", onlyNew, sealed, "row1", "", false, true},
		{"moved to another row", rotated, sealed, "row2", "", false, true},
		{"not sealed", rotated, "refresh-token-value", "row1", "", false, true},
		{"cut short", rotated, sealPrefix + "AAAA", "row1", "", false, true},
		{"empty stays empty", rotated, "", "row1", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, previous, err := tt.s.open(tt.v, tt.ad)
			if got != tt.want || previous != tt.wantPrevious || (err != nil) != tt.wantErr || err != nil && !errors.Is(err, errSealed) {
				t.Errorf("open = %q, %v, %v; want %q, %v, error %v", got, previous, err, tt.want, tt.wantPrevious, tt.wantErr)
			}
		})
	}
	if _, err := newSealer("test", b, []byte("short")); !errors.Is(err, domain.ErrInvalidInput) {
		t.Errorf("a short previous key: %v, want ErrInvalidInput", err)
	}
	if _, err := newSealer("test"); !errors.Is(err, domain.ErrInvalidInput) {
		t.Errorf("no key: %v, want ErrInvalidInput", err)
	}
}
