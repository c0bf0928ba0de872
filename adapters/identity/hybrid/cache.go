package hybrid

import (
	"crypto/sha256"

	"github.com/agentauth/agentauth/ports"
)

// cacheKey identifies a credential by its carrier and the SHA-256 digest of
// its value: the raw value is never kept, so a heap dump of the cache holds
// no usable secret. The carrier is part of the key because the centre treats
// a Bearer token and a session cookie of the same value differently.
type cacheKey struct {
	kind   ports.CredentialKind
	digest [sha256.Size]byte
}

func keyOf(cred ports.Credential) cacheKey {
	return cacheKey{kind: cred.Kind, digest: cred.Digest()}
}

// flightKey names the key's call to the centre for singleflight: the
// carrier's byte and the digest.
func (k cacheKey) flightKey() string {
	var b [1 + sha256.Size]byte
	b[0] = byte(k.kind)
	copy(b[1:], k.digest[:])
	return string(b[:])
}
