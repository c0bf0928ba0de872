// Package ports declares the interfaces the application core needs from the
// outside world: identity providers, stores, the audit log and the clock.
// Each is small and owned by its consumer; adapters implement them.
package ports

//go:generate go tool mockgen -destination=mocks/mocks.go -package=mocks github.com/agentauth/agentauth/ports Authenticator,SessionStore,AuditStore,AuditCheckpointStore,AuditObserver,AuditLog,SettingsStore,Clock,ProjectStore,CatalogStore,PolicyStore,QuotaStore,AgentStore,ToolCallStore,SessionModeStore,IdentityProvider,LoginSessionStore,LoginSessionWatcher,AuthRequestStore,LoginThrottle,AgentTokenSigner,MCPUpstream,MCPStream,UpstreamCredentials,ApprovalNotifier,ConnectionStore,UpstreamAuthorizer

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"time"
	"unsafe"

	"github.com/agentauth/agentauth/domain"
)

// CredentialKind says where a credential was carried.
type CredentialKind int

// Credential carriers.
const (
	CredentialNone   CredentialKind = iota
	CredentialBearer                // Authorization: Bearer <value>
	CredentialCookie                // the user_session cookie
)

// Credential is what a caller presented. Value is a secret: never log it.
type Credential struct {
	Kind  CredentialKind
	Value string
}

// Digest is the SHA-256 of the value. Caches and key rings keep credentials
// by their digest, never by the raw value. The string's bytes are hashed in
// place: a []byte conversion would copy every token longer than 32 bytes to
// the heap on the request path, and Sum256 only reads its argument and
// keeps no reference, which is what makes the aliasing safe.
func (c Credential) Digest() [sha256.Size]byte {
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(c.Value), len(c.Value)))
}

// Authenticator turns a credential into a principal, or fails with an error
// wrapping domain.ErrUnauthenticated (or domain.ErrUnavailable when the
// identity source cannot answer).
type Authenticator interface {
	Authenticate(ctx context.Context, cred Credential) (domain.Principal, error)
}

// SessionFilter narrows ListSessions. With Owner and Projects both empty
// it lists every session; otherwise the sessions owned by Owner or in one
// of Projects (a LEAD's own sessions and those of the projects it leads).
// Page bounds the answer (keyed by creation time and ID).
type SessionFilter struct {
	Owner    string
	Projects []string
	Page
}

// SessionStore keeps agent sessions.
//
// A store that implements LoginSessionWatcher reports through it, once
// committed, every session created, deleted or changed (SessionChangeKey;
// the mode of SessionModeStore included), so that instances keeping session
// lists in memory forget them at once.
type SessionStore interface {
	CreateSession(ctx context.Context, s domain.Session) error
	// GetSession fails with domain.ErrNotFound when there is no such session.
	GetSession(ctx context.Context, id string) (domain.Session, error)
	// ListSessions returns sessions newest first (creation time, then ID).
	ListSessions(ctx context.Context, f SessionFilter) ([]domain.Session, error)
	// DeleteSession fails with domain.ErrNotFound when there is no such session.
	DeleteSession(ctx context.Context, id string) error
}

// AuditQuery selects audit records, newest first. Zero fields do not filter.
// Before is a cursor: only records with Seq < Before.
type AuditQuery struct {
	Subject  string
	Decision domain.AuditDecision
	Since    time.Time
	Until    time.Time
	Before   int64
	Limit    int
}

// AuditLocation is where the durable audit log (adapters/auditlog) holds
// record Seq: the log segment and the byte offset of its entry.
type AuditLocation struct {
	Seq     int64
	Segment uint64
	Offset  int64
}

// ErrRecordRefused is wrapped by AppendAudit when the store refused the
// content of a record (not when it is unavailable): the audit writer then
// retries the batch's other records without it.
var ErrRecordRefused = errors.New("audit record refused by the store")

// AuditStore persists audit records durably.
type AuditStore interface {
	// AppendAudit writes the records in one transaction, in order, assigning
	// each its Seq and extending the hash chain. When it returns nil every
	// record is durable; on error none is.
	AppendAudit(ctx context.Context, records []domain.AuditRecord) error
	QueryAudit(ctx context.Context, q AuditQuery) ([]domain.AuditRecord, error)
	// AuditChain returns records with Seq > after in increasing order, at
	// most limit of them, for verification.
	AuditChain(ctx context.Context, after int64, limit int) ([]domain.AuditRecord, error)
}

// AuditCheckpointStore keeps the signed checkpoints of the audit chain.
type AuditCheckpointStore interface {
	// AppendCheckpoint calls next with the latest checkpoint (nil when there
	// is none) while no other AppendCheckpoint, of this or another instance,
	// can run, and stores what next returns unless it says skip. It returns
	// the stored checkpoint and whether one was stored.
	AppendCheckpoint(ctx context.Context, next func(last *domain.AuditCheckpoint) (cp domain.AuditCheckpoint, store bool)) (domain.AuditCheckpoint, bool, error)
	// Checkpoints returns checkpoints with Seq > after in increasing Seq
	// order, at most limit of them.
	Checkpoints(ctx context.Context, after int64, limit int) ([]domain.AuditCheckpoint, error)
	// LastCheckpoint returns the checkpoint with the highest Seq.
	LastCheckpoint(ctx context.Context) (domain.AuditCheckpoint, bool, error)
	// NewestCheckpointThrough returns the checkpoint with the highest Seq
	// at most seq: the one a checkpoint after seq must link to, and where
	// retention may cut the chain.
	NewestCheckpointThrough(ctx context.Context, seq int64) (domain.AuditCheckpoint, bool, error)
}

// AuditObserver is told the head of the audit chain after every durable
// append (the checkpoint signer).
type AuditObserver interface {
	Observe(seq int64, hash string)
}

// AuditChainStarter is implemented by an audit store whose oldest records
// retention may remove: the chain it keeps starts after a signed
// checkpoint, and verification starts there instead of at the first record.
type AuditChainStarter interface {
	ChainStart(ctx context.Context) (domain.ChainStart, error)
}

// AuditLog records access decisions. Record returns only once the record is
// durable, so a response sent after it is never missing from the log.
type AuditLog interface {
	Record(ctx context.Context, r domain.AuditRecord) error
}

// SettingsStore keeps the service-wide settings.
type SettingsStore interface {
	// GetSettings returns domain.DefaultSettings when none were saved.
	GetSettings(ctx context.Context) (domain.Settings, error)
	PutSettings(ctx context.Context, s domain.Settings) error
}

// Clock tells the time; tests replace it.
type Clock interface {
	Now() time.Time
}

// sessionPrefix starts what a LoginSessionWatcher reports for an agent
// session, apart from login sessions, revocations and managed keys.
const sessionPrefix = "session:"

// SessionChangeKey is the watcher's report of a change of the agent
// session id.
func SessionChangeKey(id string) string { return sessionPrefix + id }

// IsSessionReport reports whether a watcher report is about an agent
// session.
func IsSessionReport(report string) bool { return strings.HasPrefix(report, sessionPrefix) }

// registryPrefix starts what a LoginSessionWatcher reports for a change of
// what tool-call decisions read besides sessions and agents.
const registryPrefix = "registry:"

// A store that implements LoginSessionWatcher reports through it, once
// committed, every change of the settings, a server, a tool or a policy
// rule: RegistryChangeKey of "settings", "server:" and the server's name,
// "tool:" and the tool's name, "policy:" and the rule's ID, so that
// instances keeping them in memory forget them at once.
const (
	RegistrySettings = "settings"
	RegistryServer   = "server:"
	RegistryTool     = "tool:"
	RegistryPolicy   = "policy:"
)

// RegistryChangeKey is the watcher's report of a change of what, one of
// the Registry names above (with its server's or tool's name or its
// rule's ID).
func RegistryChangeKey(what string) string { return registryPrefix + what }

// IsRegistryReport reports whether a watcher report is about the
// settings, a server, a tool or a policy rule.
func IsRegistryReport(report string) bool { return strings.HasPrefix(report, registryPrefix) }
