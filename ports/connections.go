package ports

import (
	"context"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// ConnectionStore keeps people's connections to servers' upstreams
// (upstream_auth type oauth2) and the connect requests waiting for their
// callback. The tokens it is given are sealed already (app seals them):
// the store never sees one in clear. Every change carries the request's
// audit intent. A shared implementation (PostgreSQL) makes a connection
// made on one instance used by all, and one refresh at a time among them
// (LeaseRefresh).
type ConnectionStore interface {
	// PutConnection creates the connection of (c.Subject, c.Server), or
	// replaces it (a person connecting again), with c.Version.
	PutConnection(ctx context.Context, c domain.Connection) error
	// GetConnection fails with domain.ErrNotFound when there is none.
	GetConnection(ctx context.Context, subject, server string) (domain.Connection, error)
	// ListConnections lists a page of the connections of subject, or of
	// everyone when subject is "", newest first (creation time, then ID).
	ListConnections(ctx context.Context, subject string, page Page) ([]domain.Connection, error)
	// UpdateConnection stores c if the stored version is c.Version-1, and
	// ends any refresh lease; domain.ErrConflict when another write came
	// first, domain.ErrNotFound when it was removed.
	UpdateConnection(ctx context.Context, c domain.Connection) error
	// DeleteConnection removes the connection and returns it as it was
	// (to revoke its tokens); domain.ErrNotFound when there is none.
	DeleteConnection(ctx context.Context, subject, server string) (domain.Connection, error)
	// LeaseRefresh takes the right to refresh the connection until until,
	// when nobody holds it at now and it is still at version (it was not
	// refreshed since the caller read it), across every handle of the
	// store: true when taken. UpdateConnection ends it; so does until
	// passing.
	LeaseRefresh(ctx context.Context, subject, server string, version int64, now, until time.Time) (bool, error)

	// PutConnectRequest stores a connect request until its callback, and
	// drops those expired at now.
	PutConnectRequest(ctx context.Context, r ConnectRequest, now time.Time) error
	// TakeConnectRequest deletes and returns the request stored under
	// stateHash if it has not expired at now; otherwise
	// domain.ErrNotFound. A state is used once.
	TakeConnectRequest(ctx context.Context, stateHash string, now time.Time) (ConnectRequest, error)
}

// ConnectRequest is GET /connect/{server} waiting for its callback: who
// connects which server, and what the callback must send the
// authorization server again.
type ConnectRequest struct {
	// StateHash is the hex SHA-256 of the state parameter.
	StateHash       string
	Subject, Server string
	// Issuer and ClientID are the authorization server and client the
	// flow began with; the callback refuses another.
	Issuer, ClientID string
	// CodeVerifier is the PKCE verifier (sealed); Resource the RFC 8707
	// resource asked for ("" none).
	CodeVerifier string
	Resource     string
	ReturnTo     string
	ExpiresAt    time.Time
}
