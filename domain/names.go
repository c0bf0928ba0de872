package domain

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Names are labels for people: what agentauth shows beside a subject or an
// agent's id. A name is never an identity and never decides anything; it
// is text others chose (a person sets its own display name at its identity
// provider), so it is kept printable and bounded, and always shown with
// the subject or id it labels.

// MaxPersonName bounds a person's display name as kept, in bytes.
const MaxPersonName = 128

// MaxAgentName bounds an agent's name, in bytes.
const MaxAgentName = 64

// PersonNameOf is a name an identity provider gave for a person
// (preferred_username, name or email) as agentauth keeps it: every space
// one ASCII space, runs of them one, none at either end; what is not
// printable (control and format characters, bidirectional overrides,
// zero-width characters, invalid UTF-8) left out; over MaxPersonName bytes
// cut at a character's end, with "…".
func PersonNameOf(s string) string {
	kept := strings.Map(func(r rune) rune {
		switch {
		case unicode.IsSpace(r):
			return ' '
		case r == utf8.RuneError || !unicode.IsPrint(r):
			return -1
		}
		return r
	}, s)
	kept = strings.Join(strings.Fields(kept), " ")
	if len(kept) <= MaxPersonName {
		return kept
	}
	const cut = "…"
	end := MaxPersonName - len(cut)
	for end > 0 && !utf8.RuneStart(kept[end]) {
		end--
	}
	return strings.TrimRight(kept[:end], " ") + cut
}

// ValidateAgentName accepts "" (no name) or 1 to MaxAgentName bytes of
// printable UTF-8 (letters, marks, numbers, punctuation, symbols and the
// ASCII space; no control or format character, no bidirectional override)
// neither starting nor ending with a space.
func ValidateAgentName(name string) error {
	if name == "" {
		return nil
	}
	bad := len(name) > MaxAgentName || !utf8.ValidString(name) || name[0] == ' ' || name[len(name)-1] == ' '
	for _, r := range name {
		if bad {
			break
		}
		bad = !unicode.IsPrint(r)
	}
	if bad {
		return fmt.Errorf("agent name: up to %d bytes of printable text (no control, format or bidirectional characters), not starting or ending with a space: %w",
			MaxAgentName, ErrInvalidInput)
	}
	return nil
}
