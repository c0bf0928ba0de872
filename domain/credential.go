package domain

// IsBearerToken reports whether s has the syntax of a Bearer credential
// (RFC 6750 §2.1, b64token): one or more of ALPHA DIGIT - . _ ~ + / and
// then only "=" padding. Anything else in an Authorization header (a
// no-break space, a quote, a second word) makes the request malformed.
func IsBearerToken(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/') {
			break
		}
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

// MinAPIKeyLength is the shortest static API key accepted (SERVICE_API_KEY,
// auth.keys, local mode's key file): shorter keys are guessable.
const MinAPIKeyLength = 16
