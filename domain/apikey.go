package domain

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"hash/crc32"
	"math/big"
	"slices"
	"strconv"
	"time"
)

// MethodManagedKey is how a caller that presented a managed API key (one
// made through POST /api/v2/keys) proved who it is.
const MethodManagedKey AuthMethod = "managed_key"

// Managed API keys have the form aak_<id>_<secret><checksum>:
//
//   - "aak_" makes a leaked key recognisable to secret scanners;
//   - id is 12 characters of lower-case base32 (60 random bits), the key's
//     public name: in lists, audit records and URLs;
//   - secret is 43 base62 characters (256 random bits);
//   - checksum is 6 base62 characters of the CRC-32 of everything before
//     it, so a mistyped or truncated key is refused without a lookup and
//     scanners can tell a real key from a look-alike.
//
// Only alphanumerics and "_" are used: the key survives shells, URLs, YAML
// and RFC 6750's b64token syntax without quoting, and a double click
// selects all of it.
const (
	KeyPrefix      = "aak_"
	keyIDLen       = 12
	keySecretLen   = 43
	keyChecksumLen = 6
	// KeyLen is the length of every managed key.
	KeyLen = len(KeyPrefix) + keyIDLen + 1 + keySecretLen + keyChecksumLen
)

const (
	keyIDAlphabet = "abcdefghijklmnopqrstuvwxyz234567"
	base62        = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// Reason codes of managed-key refusals.
const (
	ReasonKeyMalformed        = "key_malformed"
	ReasonKeyUnknown          = "key_unknown"
	ReasonKeyExpired          = "key_expired"
	ReasonKeyRevoked          = "key_revoked"
	ReasonKeyOwnerGone        = "key_owner_disabled"
	ReasonKeyWiderThanOwner   = "key_wider_than_owner"
	ReasonKeyExpiry           = "key_expiry_out_of_range"
	ReasonKeyLimit            = "key_limit_reached"
	ReasonKeyLacksPermission  = "key_lacks_permission"
	ReasonKeyProject          = "key_project_not_allowed"
	ReasonKeyTool             = "key_tool_not_allowed"
	ReasonKeyCannotMakeKeys   = "key_cannot_manage_keys"
	ReasonServiceAccountRole  = "service_account_role_unknown"
	ReasonServiceAccountTaken = "service_account_exists"
)

// ManagedKey is a newly made key: its id and the full secret text, shown
// once to its maker and never stored.
type ManagedKey struct {
	ID   string
	Text string
}

// NewManagedKey makes a key from 316 fresh random bits.
func NewManagedKey() ManagedKey {
	var id [keyIDLen]byte
	var raw [keyIDLen]byte
	_, _ = rand.Read(raw[:]) // never fails on supported platforms
	for i, b := range raw {
		id[i] = keyIDAlphabet[b&31]
	}
	var secret [32]byte
	_, _ = rand.Read(secret[:])
	body := KeyPrefix + string(id[:]) + "_" + base62Fixed(new(big.Int).SetBytes(secret[:]), keySecretLen)
	sum := keyChecksum(body)
	return ManagedKey{ID: string(id[:]), Text: body + string(sum[:])}
}

// keyChecksum is the CRC-32 (IEEE) of body in 6 base62 characters. It is
// computed on every use of a key, so without allocating.
func keyChecksum(body string) [keyChecksumLen]byte {
	var out [keyChecksumLen]byte
	n := crc32.ChecksumIEEE([]byte(body))
	for i := keyChecksumLen - 1; i >= 0; i-- {
		out[i] = base62[n%62]
		n /= 62
	}
	return out
}

// base62Fixed writes n in exactly width base62 digits, zero-padded; n must
// fit (2^256 < 62^43).
func base62Fixed(n *big.Int, width int) string {
	out := make([]byte, width)
	b62 := big.NewInt(62)
	m := new(big.Int)
	for i := width - 1; i >= 0; i-- {
		n.DivMod(n, b62, m)
		out[i] = base62[m.Int64()]
	}
	return string(out)
}

// LooksLikeManagedKey reports whether a credential claims to be a managed
// key (by its prefix): such a credential is decided by the managed keys
// alone, never handed to another authenticator.
func LooksLikeManagedKey(s string) bool {
	return len(s) >= len(KeyPrefix) && s[:len(KeyPrefix)] == KeyPrefix
}

// ParseManagedKey checks a presented key's form and checksum and returns
// its id. It reads nothing but s, so a mistyped, truncated or forged key
// costs no lookup.
func ParseManagedKey(s string) (id string, err error) {
	if len(s) != KeyLen || !LooksLikeManagedKey(s) || s[len(KeyPrefix)+keyIDLen] != '_' {
		return "", RefuseToken(ReasonKeyMalformed, ErrUnauthenticated, "not a managed key (want aak_<id>_<secret><checksum>, %d characters)", KeyLen)
	}
	id = s[len(KeyPrefix) : len(KeyPrefix)+keyIDLen]
	if !ValidKeyID(id) {
		return "", RefuseToken(ReasonKeyMalformed, ErrUnauthenticated, "not a managed key (the id has characters outside a-z and 2-7)")
	}
	rest := s[len(KeyPrefix)+keyIDLen+1:]
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return "", RefuseToken(ReasonKeyMalformed, ErrUnauthenticated, "not a managed key (the secret has characters outside 0-9, A-Z and a-z)")
		}
	}
	sum := keyChecksum(s[:KeyLen-keyChecksumLen])
	if string(sum[:]) != s[KeyLen-keyChecksumLen:] { // public data: no constant time needed
		return "", RefuseToken(ReasonKeyMalformed, ErrUnauthenticated, "the key's checksum does not match: it was mistyped or truncated")
	}
	return id, nil
}

// ValidKeyID reports whether id has the form of a managed key's id.
func ValidKeyID(id string) bool {
	if len(id) != keyIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// HashManagedKey is what stores keep of a key: the SHA-256 of its text. A
// fast unsalted hash is enough because the secret has 256 random bits: no
// dictionary or brute force reaches it, so a slow or keyed hash would only
// cost every uncached request without protecting anything more.
func HashManagedKey(text string) [32]byte { return sha256.Sum256([]byte(text)) }

// SameKeyHash compares two key hashes in constant time.
func SameKeyHash(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }

// PermissionSet is a set of permissions; the zero value is empty.
type PermissionSet struct{ bits permBits }

// NewPermissionSet is the set of perms; unknown names are left out.
func NewPermissionSet(perms []Permission) PermissionSet { return PermissionSet{bitsOf(perms)} }

// Has reports whether p is in the set.
func (s PermissionSet) Has(p Permission) bool {
	i, ok := permIndex[p]
	return ok && s.bits&(1<<i) != 0
}

// Intersect is what both sets hold.
func (s PermissionSet) Intersect(o PermissionSet) PermissionSet {
	return PermissionSet{s.bits & o.bits}
}

// Without is what s holds and o does not.
func (s PermissionSet) Without(o PermissionSet) PermissionSet { return PermissionSet{s.bits &^ o.bits} }

// Empty reports whether the set holds nothing.
func (s PermissionSet) Empty() bool { return s.bits == 0 }

// List is the set in documentation order.
func (s PermissionSet) List() []Permission { return permissionList(s.bits) }

// PermissionsOf is the set the roles grant together.
func (a *Authorizer) PermissionsOf(roles []Role) PermissionSet { return PermissionSet{a.union(roles)} }

// NarrowTeam keeps of t the projects the key may act in.
func (k *KeyScope) NarrowTeam(t Team) Team {
	if k == nil || len(k.Projects) == 0 {
		return t
	}
	keep := func(list []string) []string {
		var out []string
		for _, p := range list {
			if slices.Contains(k.Projects, p) {
				out = append(out, p)
			}
		}
		return out
	}
	return Team{Member: keep(t.Member), Leads: keep(t.Leads)}
}

// KeyScope is what a managed key narrows its owner to. A principal that
// carries one (Principal.Key) may do only what both its roles and the
// scope allow: every decision of the Authorizer applies it.
type KeyScope struct {
	// ID is the key's id; Owner the subject it acts for.
	ID    string
	Owner string
	// Permissions is the key's permissions already intersected with its
	// owner's at this moment.
	Permissions PermissionSet
	// Projects and Tools, when not empty, are the only projects and tools
	// the key may act in and call.
	Projects []string
	Tools    []string
}

// AllowsProject reports whether the scope lets the key act in project.
func (k *KeyScope) AllowsProject(project string) bool {
	return k == nil || len(k.Projects) == 0 || project != "" && slices.Contains(k.Projects, project)
}

// AllowsTool reports whether the scope lets the key call tool.
func (k *KeyScope) AllowsTool(tool string) bool {
	return k == nil || len(k.Tools) == 0 || slices.Contains(k.Tools, tool)
}

// APIKey is a managed key as stored: never its secret, only its hash.
type APIKey struct {
	ID   string
	Name string
	// Owner is the subject the key acts for: a person's subject, or a
	// service account's ("service:<name>").
	Owner string
	// Hash is HashManagedKey of the key's text.
	Hash        []byte
	Permissions []Permission
	Projects    []string
	Tools       []string
	CreatedBy   string
	CreatedAt   time.Time
	ExpiresAt   time.Time
	// RevokedAt is zero while the key is not revoked.
	RevokedAt time.Time
	// LastUsed is zero until the key is first used; it is written at most
	// once a minute.
	LastUsed time.Time
}

// KeyOwner is what a use of a key is decided with besides the key: the
// owner's roles as last seen (at its last sign-in or request with another
// credential, or as an ADMIN set them for a service account) and whether
// the owner's keys are suspended.
type KeyOwner struct {
	Subject string
	// Name is the person's display name as last seen with its roles (a
	// service account's name): a label, never an identity; "" for none.
	Name  string
	Roles []Role
	// Service marks a service account, made by an ADMIN; its roles change
	// only through the API.
	Service bool
	// Disabled: the owner was logged out by its identity provider
	// (back-channel logout naming it) or disabled by an ADMIN; its keys are
	// refused until it signs in again (a person) or an ADMIN enables it.
	Disabled  bool
	UpdatedAt time.Time
}

// ServiceAccountSubject is the subject of the service account name.
func ServiceAccountSubject(name string) string { return "service:" + name }

// CheckKeyUse decides whether key k, owned by o, may be used at now, and
// with which scope. The scope is the key's permissions intersected with
// what the owner's roles grant now, so a demoted owner's keys narrow at
// once.
func (a *Authorizer) CheckKeyUse(k APIKey, o KeyOwner, now time.Time) (*KeyScope, error) {
	switch {
	case !k.RevokedAt.IsZero():
		return nil, RefuseToken(ReasonKeyRevoked, ErrUnauthenticated, "key %s was revoked", k.ID)
	case !now.Before(k.ExpiresAt):
		return nil, RefuseToken(ReasonKeyExpired, ErrUnauthenticated, "key %s expired at %s", k.ID, k.ExpiresAt.UTC().Format(time.RFC3339))
	case o.Disabled || o.Subject != k.Owner:
		return nil, RefuseToken(ReasonKeyOwnerGone, ErrUnauthenticated, "the owner of key %s was logged out by its identity provider or disabled; it must sign in again", k.ID)
	}
	return &KeyScope{ID: k.ID, Owner: k.Owner, Permissions: NewPermissionSet(k.Permissions).Intersect(a.PermissionsOf(o.Roles)),
		Projects: k.Projects, Tools: k.Tools}, nil
}

// NarrowKey checks that the permissions asked for a new key are among
// held (the maker's own); none asked means all of held.
func NarrowKey(held PermissionSet, asked []Permission) ([]Permission, error) {
	if len(asked) == 0 {
		return held.List(), nil
	}
	for _, p := range asked {
		// Exactly a permission's name: "audit:read " is no permission
		// (ParsePermission would read it as one, NewPermissionSet drop it).
		if known, err := ParsePermission(string(p)); err != nil || known != p {
			return nil, RefuseToken(ReasonKeyWiderThanOwner, ErrInvalidInput, "permissions: unknown permission %q (GET /api/v2/me lists yours)", p)
		}
	}
	wider := NewPermissionSet(asked).Without(held)
	if !wider.Empty() {
		return nil, RefuseToken(ReasonKeyWiderThanOwner, ErrForbidden, "a key cannot hold permissions its owner lacks: %v", wider.List())
	}
	return NewPermissionSet(asked).List(), nil
}

// KeyExpiry reads the expiry asked for a key: after now and no later than
// now+maxTTL.
func KeyExpiry(asked, now time.Time, maxTTL time.Duration) error {
	if asked.IsZero() {
		return RefuseToken(ReasonKeyExpiry, ErrInvalidInput, "expires_at is required (RFC 3339), at most %s from now", maxTTL)
	}
	if !asked.After(now) {
		return RefuseToken(ReasonKeyExpiry, ErrInvalidInput, "expires_at %s is in the past", asked.UTC().Format(time.RFC3339))
	}
	if asked.After(now.Add(maxTTL)) {
		return RefuseToken(ReasonKeyExpiry, ErrInvalidInput, "expires_at %s is beyond the maximum of %s from now (auth.apiKeys.maxTTL)", asked.UTC().Format(time.RFC3339), maxTTL)
	}
	return nil
}

// String hides nothing secret: the key text never reaches an APIKey.
func (k APIKey) String() string { return fmt.Sprintf("key %s of %s", k.ID, k.Owner) }

// KeyChange names a change to a managed key in an audit intent.
func KeyChange(action, id, owner string) string {
	s := action + " api key " + id
	if owner != "" {
		s += " of " + owner
	}
	return s
}

// KeyOwnerChange names the writing of a key owner in an audit intent.
func KeyOwnerChange(o KeyOwner) string {
	s := "set api key owner " + o.Subject + " roles [" + JoinRoles(o.Roles) + "]"
	if o.Name != "" {
		s += " name " + strconv.Quote(o.Name)
	}
	if o.Service {
		s += " (service account)"
	}
	if o.Disabled {
		s += ", keys suspended"
	}
	return s
}
