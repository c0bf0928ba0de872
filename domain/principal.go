package domain

import "slices"

// AuthMethod says how a caller proved who it is.
type AuthMethod string

// The authentication methods, one per mode of the service.
const (
	MethodAPIKey AuthMethod = "api_key"
	MethodDebug  AuthMethod = "debug"
	MethodLocal  AuthMethod = "local"
	MethodOIDC   AuthMethod = "oidc"
	MethodHybrid AuthMethod = "hybrid"
)

// Principal is an authenticated caller: who it is, which roles it holds and
// where those roles came from. The zero value is no one and holds no role.
type Principal struct {
	Subject string
	// Name is how the person is called as its credential says
	// (PersonNameOf): a label shown beside Subject, never an identity and
	// never part of a decision; "" when the credential names none.
	Name   string
	Roles  []Role
	Method AuthMethod
	// RoleSource explains where the roles came from, for /api/v2/me and the
	// audit log: "api key", "debug key", "id_token", "remote https://…".
	RoleSource string
	// SessionID is the identity provider's session (the sid claim) an OIDC
	// Bearer token belongs to; empty otherwise. A back-channel logout of it
	// refuses the token.
	SessionID string
	// Audience is the aud claim of the provider access token that
	// authenticated the caller; nil for every other credential. The MCP
	// gateway admits a provider token only when it names the gateway
	// resource called (RFC 8707).
	Audience []string
	// ResourceOnly marks a provider access token admitted only because its
	// audience names gateway resources ({gateway base}/mcp/{server}), not
	// this service's client: it opens the gateway endpoint of those servers
	// and nothing else (ReasonTokenGatewayOnly).
	ResourceOnly bool
	// Key is set when the caller presented a managed API key: the key's
	// scope, which narrows every decision made for the principal (its
	// Roles are the owner's at this moment).
	Key *KeyScope
}

// Has reports whether the principal holds role r.
func (p Principal) Has(r Role) bool { return slices.Contains(p.Roles, r) }
