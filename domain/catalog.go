package domain

import (
	"fmt"
	"time"
)

// Server is a registered MCP-style tool server.
type Server struct {
	Name      string
	URL       string
	CreatedAt time.Time
}

// Tool is a tool a registered server offers. ReadOnly tools do not change
// anything outside the agent and are the only ones a readonly session runs.
type Tool struct {
	Name      string
	Server    string
	ReadOnly  bool
	CreatedAt time.Time
}

const maxNameLen = 128

// ValidateName accepts 1 to 128 characters from A-Z a-z 0-9 . _ - : / , so
// that tool and server names match policy patterns without escaping.
func ValidateName(kind, name string) error {
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("%s name must have 1 to %d characters: %w", kind, maxNameLen, ErrInvalidInput)
	}
	for i := 0; i < len(name); i++ {
		if !nameChar(name[i]) {
			return fmt.Errorf("%s name %q: use letters, digits and . _ - : / only: %w", kind, name, ErrInvalidInput)
		}
	}
	return nil
}

func nameChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '.', '_', '-', ':', '/':
		return true
	}
	return false
}
