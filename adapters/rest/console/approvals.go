package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
)

// approvals lists the pending tool calls of the sessions the caller sees
// (its own and, for a LEAD, its projects'), each with what its approver
// must see before approving: the arguments, the tool's description, the
// session, the agent chain, who asked and the rule that asked.
func (c *Console) approvals(ctx *fiber.Ctx) error {
	pending, err := c.uc.ToolCalls.Pending(ctx.UserContext(), c.principal(ctx))
	if err != nil {
		return err
	}
	return c.render(ctx, fiber.StatusOK, "approvals", "Approvals", pending)
}

// argument is one top-level argument of a call as the Approvals page shows
// it: a string as its text, anything else as indented JSON; a long value
// is folded behind its first characters, and says how long it is.
type argument struct {
	Name  string
	Value string
	// Folded: Value is long; Preview is its start.
	Folded  bool
	Preview string
	Chars   int
	// Text: the value is a JSON string, shown as its text.
	Text bool
}

// Values longer than foldChars characters or foldLines lines are folded.
const (
	foldChars  = 200
	foldLines  = 6
	previewLen = 80
)

// arguments reads a call's canonical arguments (a JSON object) member by
// member, in their canonical order. Arguments that do not read as an
// object come back whole as one unnamed value: never dropped.
func arguments(canonical []byte) []argument {
	dec := json.NewDecoder(bytes.NewReader(canonical))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return []argument{shown("", canonical)}
	}
	var out []argument
	for dec.More() {
		t, err := dec.Token()
		name, ok := t.(string)
		var raw json.RawMessage
		if err != nil || !ok || dec.Decode(&raw) != nil {
			return []argument{shown("", canonical)}
		}
		out = append(out, shown(name, raw))
	}
	return out
}

// shown is one argument's display: a string's text with control and
// format characters (bidirectional overrides, zero-width spaces) written
// as \u escapes, so nothing reads otherwise than it runs; other values as
// indented JSON.
func shown(name string, raw []byte) argument {
	a := argument{Name: name}
	var text string
	if json.Unmarshal(raw, &text) == nil && len(raw) > 0 && raw[0] == '"' {
		a.Text, a.Value = true, visible(text)
	} else {
		var b bytes.Buffer
		if json.Indent(&b, raw, "", "  ") != nil {
			b.Reset()
			b.Write(raw)
		}
		a.Value = visible(b.String())
	}
	a.Chars = utf8.RuneCountInString(a.Value)
	if a.Chars > foldChars || strings.Count(a.Value, "\n") >= foldLines {
		a.Folded = true
		first, _, _ := strings.Cut(a.Value, "\n")
		if r := []rune(first); len(r) > previewLen {
			first = string(r[:previewLen])
		}
		a.Preview = first
	}
	return a
}

// visible writes every control or format character but newline and tab
// as a \u escape.
func visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r != '\n' && r != '\t' && (unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError) {
			if r > 0xFFFF {
				fmt.Fprintf(&b, `\U%08X`, r)
			} else {
				fmt.Fprintf(&b, `\u%04X`, r)
			}
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
