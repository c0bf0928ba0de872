package app

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/agentauth/agentauth/domain"
)

// sealer seals secrets before they reach a store with AES-256-GCM, so
// that a copy of the database (or of a backup) yields none of them: the
// provider's tokens of login sessions, the upstream tokens of people's
// connections. The additional data binds a sealed value to its row (a
// value moved to another row does not open). The first key seals; every
// key opens, so that a key can be rotated: the key rotated out stays as a
// previous key until every value it sealed was sealed again.
type sealer struct {
	keys []cipher.AEAD
}

const sealPrefix = "v1."

// errSealed means a stored value could not be opened (the key changed,
// or it was moved to another row).
var errSealed = errors.New("the stored value does not open with the keys in force")

// newSealer takes the sealing key first, then the previous keys; each
// must be 32 bytes (AES-256).
func newSealer(what string, keys ...[]byte) (*sealer, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s: no key: %w", what, domain.ErrInvalidInput)
	}
	s := &sealer{}
	for _, k := range keys {
		if len(k) != 32 {
			return nil, fmt.Errorf("%s: want 32 bytes, got %d: %w", what, len(k), domain.ErrInvalidInput)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		s.keys = append(s.keys, aead)
	}
	return s, nil
}

// seal seals v for the row ad with the first key; "" stays "".
func (s *sealer) seal(v, ad string) string {
	if v == "" {
		return ""
	}
	aead := s.keys[0]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(v)+aead.Overhead())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails on supported platforms
	return sealPrefix + base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, []byte(v), []byte(ad)))
}

// open opens a value sealed for the row ad; previous says a previous key
// opened it (it should be sealed again). "" stays "".
func (s *sealer) open(v, ad string) (plain string, previous bool, err error) {
	if v == "" {
		return "", false, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(v, sealPrefix))
	if !strings.HasPrefix(v, sealPrefix) || err != nil {
		return "", false, errSealed
	}
	for i, aead := range s.keys {
		n := aead.NonceSize()
		if len(raw) < n {
			return "", false, errSealed
		}
		if b, err := aead.Open(nil, raw[:n], raw[n:], []byte(ad)); err == nil {
			return string(b), i > 0, nil
		}
	}
	return "", false, errSealed
}
