package domain

import "strings"

// IsBearerToken reports whether s has the syntax of a Bearer credential
// (RFC 6750 §2.1, b64token): one or more of ALPHA DIGIT - . _ ~ + / and
// then only "=" padding. Anything else in an Authorization header (a
// no-break space, a quote, a second word) makes the request malformed.
func IsBearerToken(s string) bool {
	i := 0
	for i < len(s) && b64token[s[i]] {
		i++
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// LooksLikeJWT reports whether a Bearer credential has the shape of a
// JWS in compact form (header.payload.signature): what an identity
// provider's access token looks like, and an API key does not. Syntax
// only: it says which verifier to ask first, never whether to accept.
func LooksLikeJWT(s string) bool {
	return strings.Count(s, ".") == 2
}

// b64token marks the characters of a b64token before its padding: one
// table look-up per byte of every Bearer credential.
var b64token = func() (t [256]bool) {
	for c := range 256 {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/'
	}
	return t
}()

// MinAPIKeyLength is the shortest static API key accepted (SERVICE_API_KEY,
// auth.keys, local mode's key file): shorter keys are guessable.
const MinAPIKeyLength = 16
