package domain

import (
	"errors"
	"testing"
)

func TestParseSessionMode(t *testing.T) {
	for _, in := range []string{"readonly", "ask", "auto"} {
		if m, err := ParseSessionMode(in); err != nil || string(m) != in {
			t.Errorf("ParseSessionMode(%q) = %q, %v", in, m, err)
		}
	}
	for _, in := range []string{"", "AUTO", "yolo"} {
		if _, err := ParseSessionMode(in); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("ParseSessionMode(%q) err = %v, want ErrInvalidInput", in, err)
		}
	}
}

func TestSettingsValidate(t *testing.T) {
	if err := DefaultSettings().Validate(); err != nil {
		t.Errorf("default settings invalid: %v", err)
	}
	if err := (Settings{DefaultSessionMode: "never"}).Validate(); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("Validate(mode never) = %v, want ErrInvalidInput", err)
	}
}

func TestSettingsStoredForm(t *testing.T) {
	s := Settings{SecurityGateway: true, DefaultSessionMode: ModeReadonly}
	b, err := EncodeSettings(s)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   string
		want Settings
		err  bool
	}{
		{"round trip", string(b), s, false},
		{"older form keeps defaults", `{"security_gateway":true}`, Settings{SecurityGateway: true, DefaultSessionMode: DefaultSettings().DefaultSessionMode}, false},
		{"not JSON", `{`, Settings{}, true},
	}
	for _, tt := range tests {
		got, err := DecodeSettings([]byte(tt.in))
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("%s: got %+v, %v; want %+v (error %v)", tt.name, got, err, tt.want, tt.err)
		}
	}
}
