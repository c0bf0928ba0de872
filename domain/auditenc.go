package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The audit text rule. Every text field of a record is put in this form
// before it is hashed and stored, so that what is hashed is exactly what
// every store keeps and every reader gets back:
//
//   - `\` becomes `\\`;
//   - every byte that is not part of valid UTF-8, every C0 control
//     (0x00–0x1F) and DEL (0x7F) becomes `\xHH` (two lowercase hex digits);
//   - everything else is kept as is.
//
// The result is valid UTF-8 without NUL or control characters, which both
// stores, JSON and terminals keep byte for byte. The rule is reversible
// (UnescapeAuditText) and a backslash in escaped text is always followed by
// `\` or `x`, so the truncation marker `\[` cannot occur in escaped text.

// AuditFieldMax bounds every escaped text field of a record, in bytes.
const AuditFieldMax = 2048

// truncMarkerMax is the longest marker: `\[truncated ` + up to 20 digits +
// ` bytes sha256:` + 64 hex digits + `]`.
const truncMarkerMax = 12 + 20 + 14 + 64 + 1

// EscapeAuditText applies the audit text rule to s. It returns s itself
// (no allocation) when nothing needs escaping.
func EscapeAuditText(s string) string {
	i := firstToEscape(s)
	if i == len(s) {
		return s
	}
	b, _ := appendEscaped(make([]byte, 0, len(s)+16), s, i, -1)
	return string(b)
}

// BoundAuditText escapes s and bounds the result to AuditFieldMax bytes.
// Longer text keeps its longest prefix that fits (never splitting an escape
// or a character) followed by the marker
// `\[truncated <original length> bytes sha256:<hex SHA-256 of the original>]`.
func BoundAuditText(s string) string {
	i := firstToEscape(s)
	if i == len(s) && len(s) <= AuditFieldMax {
		return s
	}
	if len(s) <= AuditFieldMax/4 { // escaping grows a byte at most 4 times
		b, _ := appendEscaped(make([]byte, 0, len(s)+16), s, i, -1)
		return string(b)
	}
	b, done := appendEscaped(make([]byte, 0, AuditFieldMax), s, 0, AuditFieldMax)
	if done {
		return string(b)
	}
	b, _ = appendEscaped(b[:0], s, 0, AuditFieldMax-truncMarkerMax)
	sum := sha256.Sum256([]byte(s))
	b = append(b, `\[truncated `...)
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ` bytes sha256:`...)
	b = hex.AppendEncode(b, sum[:])
	b = append(b, ']')
	return string(b)
}

// firstToEscape returns the index of the first byte of s the rule changes,
// or len(s).
func firstToEscape(s string) int {
	for i := 0; i < len(s); {
		// Eight bytes at a time while they are plain ASCII the rule keeps
		// (most of every record): a quarter of the cost of sealing it went
		// to this loop byte by byte.
		for i+8 <= len(s) && plainASCII8(uint64(s[i])|uint64(s[i+1])<<8|uint64(s[i+2])<<16|uint64(s[i+3])<<24|
			uint64(s[i+4])<<32|uint64(s[i+5])<<40|uint64(s[i+6])<<48|uint64(s[i+7])<<56) {
			i += 8
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f || c == '\\' {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(s)
}

// plainASCII8 says whether the eight bytes of w are all ASCII that the
// rule keeps: none has the high bit, none is below 0x20, DEL or `\`.
// (With no high bit set the byte-wise subtractions below borrow only from
// a byte that is below the subtrahend, so there are no false answers.)
func plainASCII8(w uint64) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	zeroIn := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	return w&highs == 0 &&
		(w-0x20*ones)&highs == 0 && // no byte below 0x20
		zeroIn(w^(0x7f*ones)) == 0 &&
		zeroIn(w^('\\'*ones)) == 0
}

// appendEscaped appends s[from:] escaped to dst (s[:from] is copied as is:
// the caller knows it needs no escaping). With limit >= 0 it stops before
// dst would grow past limit bytes and reports whether all of s fit.
func appendEscaped(dst []byte, s string, from, limit int) ([]byte, bool) {
	const hexDigits = "0123456789abcdef"
	if limit >= 0 && from > limit {
		from = 0
	}
	dst = append(dst, s[:from]...)
	for i := from; i < len(s); {
		c := s[i]
		var tok []byte
		var buf [4]byte
		n := 1
		switch {
		case c == '\\':
			buf[0], buf[1] = '\\', '\\'
			tok = buf[:2]
		case c < 0x20 || c == 0x7f:
			buf[0], buf[1], buf[2], buf[3] = '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf]
			tok = buf[:4]
		case c < utf8.RuneSelf:
			buf[0] = c
			tok = buf[:1]
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				buf[0], buf[1], buf[2], buf[3] = '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf]
				tok = buf[:4]
			} else {
				n = size
				tok = append(buf[:0], s[i:i+size]...)
			}
		}
		if limit >= 0 && len(dst)+len(tok) > limit {
			return dst, false
		}
		dst = append(dst, tok...)
		i += n
	}
	return dst, true
}

// AuditText is escaped audit text read back by UnescapeAuditText.
type AuditText struct {
	// Text is the original text, or the kept prefix of it when Truncated.
	Text string
	// Truncated tells that the field was cut at AuditFieldMax; then
	// OriginalLen and OriginalSHA256 (hex) describe the whole original.
	Truncated      bool
	OriginalLen    int64
	OriginalSHA256 string
}

// ErrAuditText is returned for text that the audit text rule cannot have
// produced.
var ErrAuditText = errors.New("not audit-escaped text")

// UnescapeAuditText inverts EscapeAuditText and BoundAuditText: it returns
// the original bytes (or their kept prefix and the truncation marker's
// facts).
func UnescapeAuditText(s string) (AuditText, error) {
	var out AuditText
	if !strings.Contains(s, `\`) {
		out.Text = s
		return out, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b = append(b, c)
			continue
		}
		rest := s[i+1:]
		switch {
		case strings.HasPrefix(rest, `\`):
			b = append(b, '\\')
			i++
		case len(rest) >= 3 && rest[0] == 'x':
			v, err := hex.DecodeString(rest[1:3])
			if err != nil {
				return AuditText{}, ErrAuditText
			}
			b = append(b, v[0])
			i += 3
		case strings.HasPrefix(rest, "[truncated ") && strings.HasSuffix(rest, "]"):
			var ok bool
			out.OriginalLen, out.OriginalSHA256, ok = parseTruncMarker(rest[len("[truncated ") : len(rest)-1])
			if !ok {
				return AuditText{}, ErrAuditText
			}
			out.Truncated = true
			out.Text = string(b)
			return out, nil
		default:
			return AuditText{}, ErrAuditText
		}
	}
	out.Text = string(b)
	return out, nil
}

// parseTruncMarker reads `<n> bytes sha256:<hex>`.
func parseTruncMarker(s string) (int64, string, bool) {
	num, sum, ok := strings.Cut(s, " bytes sha256:")
	if !ok || len(sum) != 64 {
		return 0, "", false
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, "", false
	}
	if _, err := hex.DecodeString(sum); err != nil {
		return 0, "", false
	}
	return n, sum, true
}
