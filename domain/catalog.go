package domain

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Server is a registered MCP-style tool server.
type Server struct {
	Name string
	URL  string
	// Endpoint is the server's MCP endpoint (Streamable HTTP) the gateway
	// forwards to; "" when the server is not reachable through the gateway.
	Endpoint string
	// Credential names the file, in the gateway's credentials folder,
	// holding the token the gateway presents upstream; "" for none. The
	// secret itself is never stored nor returned, only this name.
	Credential string
	// UpstreamAuth, when set, is how the upstream authorizes each
	// person's calls instead (Credential is then ""): the gateway sends the
	// calling person's own token.
	UpstreamAuth *UpstreamAuth
	CreatedAt    time.Time
}

// Tool is a tool a registered server offers. ReadOnly tools do not change
// anything outside the agent and are the only ones a readonly session runs.
type Tool struct {
	Name     string
	Server   string
	ReadOnly bool
	// SecondApprover: a call that needs approval must be approved by
	// someone other than the session's owner.
	SecondApprover bool
	// Limit bounds the tool's calls that are allowed or ask (zero: none).
	Limit Limit
	// Pin is the tool's definition as its server declared it when it was
	// registered or imported, and what the server declared since when it
	// differs (see ToolPin).
	Pin ToolPin
	// Description is what the tool does, as its server describes it (an
	// import copies tools/list's) or an ADMIN wrote it: shown to whoever
	// approves its calls.
	Description string
	CreatedAt   time.Time
}

// MaxToolDescription bounds a tool's description, in bytes.
const MaxToolDescription = 4096

// ToolDescriptionOf is a description a server gave (tools/list) as one a
// tool keeps: control characters but tab and newline left out, and, over
// MaxToolDescription bytes, cut at a character's end, saying so.
func ToolDescriptionOf(s string) string {
	const cut = "… (cut)"
	kept := strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	if len(kept) <= MaxToolDescription {
		return kept
	}
	end := MaxToolDescription - len(cut)
	for end > 0 && !utf8.RuneStart(kept[end]) {
		end--
	}
	return kept[:end] + cut
}

// ValidateToolDescription accepts UTF-8 text of at most MaxToolDescription
// bytes without control characters other than tab and newline.
func ValidateToolDescription(d string) error {
	if len(d) > MaxToolDescription || !utf8.ValidString(d) {
		return fmt.Errorf("tool description: at most %d bytes of UTF-8 text: %w", MaxToolDescription, ErrInvalidInput)
	}
	for _, r := range d {
		if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f {
			return fmt.Errorf("tool description: control character %U: %w", r, ErrInvalidInput)
		}
	}
	return nil
}

const maxNameLen = 128

// ValidateCredentialName accepts "" (no credential) or the plain name of a
// file: 1 to 128 characters of A-Z a-z 0-9 . _ - not starting with a dot,
// so that a name never leaves the credentials folder.
func ValidateCredentialName(name string) error {
	if name == "" {
		return nil
	}
	if len(name) > maxNameLen || name[0] == '.' {
		return fmt.Errorf("credential name %q: want 1 to %d characters, not starting with a dot: %w", name, maxNameLen, ErrInvalidInput)
	}
	for i := 0; i < len(name); i++ {
		if !nameChar(name[i]) || name[i] == '/' || name[i] == ':' {
			return fmt.Errorf("credential name %q: use letters, digits and . _ - only (a file name in the credentials folder): %w", name, ErrInvalidInput)
		}
	}
	return nil
}

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

// CanonicalToolName is the one form of a tool name: checked against the
// name charset (so Unicode look-alikes are refused, never folded) and
// lower-cased. Registration, agent tool lists and tool calls all use it, so
// "SHELL.exec" and "shell.exec" are one tool to every rule, as they may be
// to a tool server that matches names case-insensitively.
func CanonicalToolName(name string) (string, error) {
	if err := ValidateName("tool", name); err != nil {
		return "", err
	}
	return asciiLower(name), nil
}

// CanonicalToolPattern is CanonicalToolName for a policy pattern, where *
// matches any run of characters.
func CanonicalToolPattern(pattern string) (string, error) {
	if err := ValidateName("tool pattern", stripStars(pattern, len(pattern) > 0)); err != nil {
		return "", err
	}
	return asciiLower(pattern), nil
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// lowerASCII folds one byte to lower case.
func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// SameTool reports whether a and b name one tool: equal but for ASCII case,
// so names and lists stored before names were canonical decide alike.
func SameTool(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}
