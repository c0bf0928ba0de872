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
