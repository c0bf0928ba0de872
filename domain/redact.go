package domain

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// credentialParams are the query parameters that carry a credential in
// OAuth 2.0 and OpenID Connect: bearer tokens (RFC 6750 §2.3), codes,
// token-exchange subjects and actors (RFC 8693), refresh and logout
// tokens, client secrets and passwords.
var credentialParams = []string{"access_token", "code", "token", "subject_token", "actor_token", "refresh_token",
	"id_token_hint", "client_secret", "password", "logout_token"}

// CredentialParams returns the names TargetRedactor always replaces.
func CredentialParams() []string { return append([]string(nil), credentialParams...) }

// RedactedMarker starts the value that replaces a credential in a
// recorded request target; the keyed hash and "]" follow.
const RedactedMarker = "[redacted:"

// redactedHashLen is how many bytes of the HMAC a marker keeps: 128 bits,
// enough that two values never share one by chance.
const redactedHashLen = 16

// TargetRedactor is the one rule for a request target written to a record
// (the audit log, the access log): the value of every credential-bearing
// query parameter is replaced by RedactedMarker and a keyed hash
// (HMAC-SHA-256) of the value. Equal values give equal markers, so one
// token's uses still correlate, but a marker cannot be replayed, and
// without the key not even a short password can be guessed from it.
//
// Names are matched as a server reads them: percent-decoded, '+' read as a
// space, without case (no server here reads Access_Token as access_token,
// but a credential is hidden when in doubt). Parameters are split at '&'
// and ';' (some servers split at both).
type TargetRedactor struct {
	key   []byte
	names map[string]struct{}
}

// NewTargetRedactor returns the rule with its key (at least 32 bytes) and
// the operator's names besides CredentialParams.
func NewTargetRedactor(key []byte, extra []string) (*TargetRedactor, error) {
	if len(key) < 32 {
		return nil, errors.New("the redaction key must have at least 32 bytes")
	}
	r := &TargetRedactor{key: append([]byte(nil), key...), names: map[string]struct{}{}}
	for _, n := range append(CredentialParams(), extra...) {
		n = strings.TrimSpace(n)
		if n == "" {
			return nil, fmt.Errorf("a query parameter name to redact is empty")
		}
		r.names[strings.ToLower(n)] = struct{}{}
	}
	return r, nil
}

// Redact returns target (path and query, as sent) with every credential
// replaced. A target without a query is returned as it is.
func (r *TargetRedactor) Redact(target []byte) string {
	q := bytes.IndexByte(target, '?')
	if q < 0 {
		return string(target)
	}
	var b strings.Builder
	b.Grow(len(target) + 32)
	b.Write(target[:q+1])
	rest := target[q+1:]
	for len(rest) > 0 {
		end := len(rest)
		for i, c := range rest {
			if c == '&' || c == ';' {
				end = i
				break
			}
		}
		r.param(&b, rest[:end])
		if end == len(rest) {
			break
		}
		b.WriteByte(rest[end])
		rest = rest[end+1:]
	}
	return b.String()
}

// param writes one name=value pair, its value replaced when the name is a
// credential's.
func (r *TargetRedactor) param(b *strings.Builder, p []byte) {
	eq := bytes.IndexByte(p, '=')
	if eq < 0 || eq == len(p)-1 {
		b.Write(p)
		return
	}
	if !r.isCredential(string(unescapeQuery(p[:eq]))) {
		b.Write(p)
		return
	}
	mac := hmac.New(sha256.New, r.key)
	mac.Write(unescapeQuery(p[eq+1:]))
	var sum [sha256.Size]byte
	b.Write(p[:eq+1])
	b.WriteString(RedactedMarker)
	b.WriteString(base64.RawURLEncoding.EncodeToString(mac.Sum(sum[:0])[:redactedHashLen]))
	b.WriteByte(']')
}

// isCredential reports whether a decoded parameter name is a credential's.
func (r *TargetRedactor) isCredential(name string) bool {
	_, ok := r.names[strings.ToLower(name)]
	return ok
}

// unescapeQuery decodes a query component as servers do, leniently: '+'
// is a space, %XX a byte, and a '%' not followed by two hex digits stays.
func unescapeQuery(s []byte) []byte {
	if bytes.IndexByte(s, '%') < 0 && bytes.IndexByte(s, '+') < 0 {
		return s
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '+':
			out = append(out, ' ')
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			out = append(out, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		default:
			out = append(out, c)
		}
	}
	return out
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
