package ports

import (
	"context"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// APIKeyStore keeps managed API keys (their hashes, never their secrets)
// and the owners they are decided with. Every change but TouchAPIKey
// carries the request's audit intent, like every other store change.
//
// A store that implements LoginSessionWatcher reports through it, on the
// same notifications as login sessions, every key revoked or deleted
// (KeyChangeKey) and every owner written (OwnerChangeKey), so that
// instances keeping keys in memory forget them at once.
type APIKeyStore interface {
	// CreateAPIKey stores k unless its owner already holds maxPerOwner
	// keys neither revoked nor expired at now (domain.ErrConflict), checked
	// and written atomically across every handle of the store; an id in
	// use is domain.ErrConflict too.
	CreateAPIKey(ctx context.Context, k domain.APIKey, maxPerOwner int, now time.Time) error
	// GetAPIKey fails with domain.ErrNotFound when there is none.
	GetAPIKey(ctx context.Context, id string) (domain.APIKey, error)
	// ListAPIKeys lists a page of the keys of owner, or of every key when
	// owner is "", newest first (creation time, then ID).
	ListAPIKeys(ctx context.Context, owner string, page Page) ([]domain.APIKey, error)
	// RevokeAPIKey marks the key revoked at at; domain.ErrNotFound when
	// there is none. Revoking a revoked key changes nothing.
	RevokeAPIKey(ctx context.Context, id string, at time.Time) error
	// TouchAPIKey records a use at at (callers do it at most once a
	// minute per key).
	TouchAPIKey(ctx context.Context, id string, at time.Time) error

	// GetKeyOwner fails with domain.ErrNotFound when there is none.
	GetKeyOwner(ctx context.Context, subject string) (domain.KeyOwner, error)
	// PutKeyOwner creates or replaces the owner record of o.Subject.
	PutKeyOwner(ctx context.Context, o domain.KeyOwner) error
	// CreateKeyOwner creates o, or fails with domain.ErrConflict when the
	// subject has a record (a service account's name is taken).
	CreateKeyOwner(ctx context.Context, o domain.KeyOwner) error
	// ListKeyOwners lists a page of the service accounts (service) or the
	// people, by subject (ascending, byte-wise): owners have no creation
	// time, and their update time moves. page.After.Key is the last
	// subject of the previous page; its time is not used.
	ListKeyOwners(ctx context.Context, service bool, page Page) ([]domain.KeyOwner, error)
}

// What a LoginSessionWatcher reports for managed keys, apart from login
// sessions' id hashes and revoked provider sessions.
const (
	keyPrefix   = "key:"
	ownerPrefix = "owner:"
)

// KeyChangeKey is the watcher's report of a change of the key id.
func KeyChangeKey(id string) string { return keyPrefix + id }

// OwnerChangeKey is the watcher's report of a change of the owner subject.
func OwnerChangeKey(subject string) string { return ownerPrefix + subject }

// KeyChangeOf reads a report made by KeyChangeKey.
func KeyChangeOf(report string) (id string, ok bool) { return strings.CutPrefix(report, keyPrefix) }

// OwnerChangeOf reads a report made by OwnerChangeKey.
func OwnerChangeOf(report string) (subject string, ok bool) {
	return strings.CutPrefix(report, ownerPrefix)
}

// IsKeyReport reports whether a watcher report is about managed keys (a
// key or an owner).
func IsKeyReport(report string) bool {
	return strings.HasPrefix(report, keyPrefix) || strings.HasPrefix(report, ownerPrefix)
}
