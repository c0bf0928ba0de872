// Package apikey authenticates callers by static Bearer keys. A Keyring
// holds the SHA-256 digests of its keys, never the keys themselves, and
// compares a presented key against every entry in constant time, so neither
// the key nor which entry matched leaks through timing.
//
// API-key mode uses a one-key ring granting ADMIN; debug and local mode build
// their rings on the same type.
package apikey

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Key is the API key of API-key mode (SERVICE_API_KEY or --api-key).
type Key string

// Entry is one key and the principal it authenticates.
type Entry struct {
	Key       string
	Principal domain.Principal
}

// Keyring authenticates Bearer credentials against a fixed set of keys.
type Keyring struct {
	digests    [][sha256.Size]byte
	principals []domain.Principal
}

var _ ports.Authenticator = (*Keyring)(nil)

// RoleKeys are extra keys from configuration (auth.keys[]), each granting
// its own role, built-in or custom.
type RoleKeys []Entry

// WithRoleKeys returns base extended with extra. It returns the port, not
// a *Keyring, because the mode's constructor already provides the base
// ring under that type.
func WithRoleKeys(base *Keyring, extra RoleKeys) ports.Authenticator {
	return base.With(extra...)
}

// With returns a new ring holding k's entries followed by extra.
func (k *Keyring) With(extra ...Entry) *Keyring {
	out := &Keyring{
		digests:    append([][sha256.Size]byte(nil), k.digests...),
		principals: append([]domain.Principal(nil), k.principals...),
	}
	for _, e := range extra {
		out.digests = append(out.digests, sha256.Sum256([]byte(e.Key)))
		out.principals = append(out.principals, e.Principal)
	}
	return out
}

// New returns the ring of API-key mode: key grants ADMIN.
func New(key Key) (*Keyring, error) {
	if len(key) < domain.MinAPIKeyLength {
		return nil, fmt.Errorf("apikey: the API key (SERVICE_API_KEY or --api-key) must have at least %d characters: %w", domain.MinAPIKeyLength, domain.ErrInvalidInput)
	}
	return NewKeyring([]Entry{AdminEntry(string(key), domain.MethodAPIKey, "api key")}), nil
}

// AdminEntry is a key granting ADMIN, whose subject names the key by a short
// fingerprint so audit records tell keys apart without revealing them.
func AdminEntry(key string, method domain.AuthMethod, source string) Entry {
	return Entry{Key: key, Principal: domain.Principal{
		Subject:    "apikey:" + Fingerprint(key),
		Roles:      []domain.Role{domain.RoleAdmin},
		Method:     method,
		RoleSource: source,
	}}
}

// Fingerprint is a short, non-reversible identifier of a key.
func Fingerprint(key string) string {
	d := sha256.Sum256([]byte(key))
	return hex.EncodeToString(d[:6])
}

// NewKeyring builds a ring from entries.
func NewKeyring(entries []Entry) *Keyring {
	k := &Keyring{}
	for _, e := range entries {
		k.digests = append(k.digests, sha256.Sum256([]byte(e.Key)))
		k.principals = append(k.principals, e.Principal)
	}
	return k
}

// Authenticate accepts a Bearer credential equal to one of the keys.
func (k *Keyring) Authenticate(_ context.Context, cred ports.Credential) (domain.Principal, error) {
	if cred.Kind != ports.CredentialBearer {
		return domain.Principal{}, fmt.Errorf("apikey: a Bearer key is required: %w", domain.ErrUnauthenticated)
	}
	d := cred.Digest()
	match := -1
	for i := range k.digests { // no early exit: every entry is compared
		if subtle.ConstantTimeCompare(d[:], k.digests[i][:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return domain.Principal{}, fmt.Errorf("apikey: key not accepted: %w", domain.ErrUnauthenticated)
	}
	return k.principals[match], nil
}
