package domain

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// UpstreamAuthType is how a server's upstream authorizes the calls the
// gateway forwards: with each person's own token, never one shared
// credential.
type UpstreamAuthType string

const (
	// UpstreamOAuth2: each person connects their own account at the
	// upstream's authorization server (the authorization-code flow with
	// PKCE); the gateway sends that person's access token, refreshed.
	UpstreamOAuth2 UpstreamAuthType = "oauth2"
	// UpstreamTokenExchange: the upstream trusts agentauth's identity
	// provider; the gateway exchanges the person's provider token for one
	// issued to the upstream's audience (RFC 8693, on-behalf-of).
	UpstreamTokenExchange UpstreamAuthType = "token_exchange"
)

// UpstreamAuth is a server registration's upstream_auth: how the gateway
// obtains, per person, the token it sends the server.
type UpstreamAuth struct {
	Type UpstreamAuthType
	// Issuer is the authorization server, whose endpoints come from its
	// RFC 8414 or OpenID discovery document. oauth2: "" discovers it from
	// the server endpoint's RFC 9728 protected-resource metadata;
	// token_exchange: "" is agentauth's OIDC issuer.
	Issuer string
	// ClientID is the client agentauth is at the authorization server
	// (token_exchange: "" is agentauth's OIDC client); ClientSecret names
	// the file in gateway.credentialsDir holding its secret ("" for a
	// public client; token_exchange without ClientID: agentauth's OIDC
	// client secret). The secret is never stored, only this name.
	ClientID, ClientSecret string
	// Scopes are asked for (oauth2: at connect; token_exchange: in the
	// exchange).
	Scopes []string
	// Resource is the RFC 8707 resource asked for; oauth2: "" is the one
	// the endpoint's protected-resource metadata names, when it has one.
	Resource string
	// Audience is the audience an exchanged token is issued to
	// (token_exchange only, required).
	Audience string
}

// Reason codes of people's upstream credentials.
const (
	// ReasonUpstreamNotConnected: the caller's person has no working
	// connection to the server's upstream (never connected, removed,
	// broken, or suspended); the refusal carries the URL to connect at.
	ReasonUpstreamNotConnected = "upstream_not_connected"
	// ReasonNotConnectOwner: a connect callback of a request another
	// person began.
	ReasonNotConnectOwner = "connect_request_of_another"
)

const (
	maxClientID = 256
	maxAudience = 512
	maxScopes   = 32
)

// Validate checks an upstream_auth as a registration gives it.
func (u UpstreamAuth) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("upstream_auth: "+format+": %w", append(args, ErrInvalidInput)...)
	}
	if u.Issuer != "" {
		if err := issuerURL(u.Issuer); err != nil {
			return bad("issuer %q: want an http(s) URL without query, fragment or user information", u.Issuer)
		}
	}
	if u.ClientID != "" && !printableToken(u.ClientID, maxClientID) {
		return bad("client_id: want 1 to %d printable characters without spaces", maxClientID)
	}
	if err := ValidateCredentialName(u.ClientSecret); err != nil {
		return bad("client_secret names a file in gateway.credentialsDir: %v", err)
	}
	if len(u.Scopes) > maxScopes {
		return bad("at most %d scopes", maxScopes)
	}
	for _, s := range u.Scopes {
		if !scopeToken(s) {
			return bad("scope %q: want an RFC 6749 scope token (printable, no space, quote or backslash)", s)
		}
	}
	if u.Resource != "" {
		if _, err := CanonicalResource(u.Resource); err != nil {
			return bad("resource %q: want an absolute http(s) URL without fragment (RFC 8707)", u.Resource)
		}
	}
	switch u.Type {
	case UpstreamOAuth2:
		if u.ClientID == "" {
			return bad("client_id is required with type oauth2 (agentauth's client at the upstream's authorization server)")
		}
		if u.Audience != "" {
			return bad("audience is for type token_exchange")
		}
	case UpstreamTokenExchange:
		if u.Audience == "" || !printableToken(u.Audience, maxAudience) {
			return bad("audience is required with type token_exchange: 1 to %d printable characters without spaces (the client or resource the exchanged token is for)", maxAudience)
		}
		if u.ClientSecret != "" && u.ClientID == "" {
			return bad("client_secret needs the client_id it is the secret of")
		}
	default:
		return bad("type %q: want oauth2 or token_exchange", u.Type)
	}
	return nil
}

// ValidateServerAuth checks how a server's upstream authorizes: a static
// credential or upstream_auth, each needing the endpoint it is sent to.
func ValidateServerAuth(sv Server) error {
	if sv.UpstreamAuth == nil {
		return nil
	}
	if sv.Credential != "" {
		return fmt.Errorf("server %s: credential and upstream_auth are each a way the upstream authorizes; set one: %w", sv.Name, ErrInvalidInput)
	}
	if sv.Endpoint == "" {
		return fmt.Errorf("server %s: upstream_auth: set the endpoint the person's token is sent to: %w", sv.Name, ErrInvalidInput)
	}
	return sv.UpstreamAuth.Validate()
}

func issuerURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return ErrInvalidInput
	}
	return nil
}

// printableToken: 1 to max visible ASCII characters.
func printableToken(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// scopeToken is RFC 6749 §3.3: 1*( %x21 / %x23-5B / %x5D-7E ).
func scopeToken(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c == '"' || c == '\\' || c > 0x7e {
			return false
		}
	}
	return true
}

// upstreamAuthJSON is the stored form of an UpstreamAuth.
type upstreamAuthJSON struct {
	Type         UpstreamAuthType `json:"type"`
	Issuer       string           `json:"issuer,omitempty"`
	ClientID     string           `json:"client_id,omitempty"`
	ClientSecret string           `json:"client_secret,omitempty"`
	Scopes       []string         `json:"scopes,omitempty"`
	Resource     string           `json:"resource,omitempty"`
	Audience     string           `json:"audience,omitempty"`
}

// EncodeUpstreamAuth is the stored form of u: "" for none (the server's
// static credential, if any, applies).
func EncodeUpstreamAuth(u *UpstreamAuth) string {
	if u == nil {
		return ""
	}
	b, _ := json.Marshal(upstreamAuthJSON(*u)) // strings and a slice of strings: never fails
	return string(b)
}

// DecodeUpstreamAuth reads what EncodeUpstreamAuth stored.
func DecodeUpstreamAuth(s string) (*UpstreamAuth, error) {
	if s == "" {
		return nil, nil
	}
	var j upstreamAuthJSON
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		return nil, fmt.Errorf("stored upstream_auth: %w", err)
	}
	u := UpstreamAuth(j)
	return &u, nil
}

// Equal reports whether two upstream_auth settings are the same.
func (u *UpstreamAuth) Equal(v *UpstreamAuth) bool {
	if u == nil || v == nil {
		return u == v
	}
	return u.Type == v.Type && u.Issuer == v.Issuer && u.ClientID == v.ClientID && u.ClientSecret == v.ClientSecret &&
		slices.Equal(u.Scopes, v.Scopes) && u.Resource == v.Resource && u.Audience == v.Audience
}

// String names the setting without anything secret (the secret is a
// file's name anyway), for audit notes.
func (u *UpstreamAuth) String() string {
	if u == nil {
		return "none"
	}
	s := string(u.Type)
	if u.Issuer != "" {
		s += " issuer " + u.Issuer
	}
	if u.ClientID != "" {
		s += " client " + u.ClientID
	}
	if u.Audience != "" {
		s += " audience " + u.Audience
	}
	if len(u.Scopes) > 0 {
		s += " scopes " + strings.Join(u.Scopes, " ")
	}
	return s
}

// ConnectionStatus is whether a person's connection can be used.
type ConnectionStatus string

const (
	// ConnectionActive: its tokens are sent (refreshed when they expire).
	ConnectionActive ConnectionStatus = "active"
	// ConnectionBroken: the authorization server refused a refresh (the
	// person revoked the grant, or was removed there); the person must
	// connect again.
	ConnectionBroken ConnectionStatus = "broken"
)

// Connection is one person's authorization of one server's upstream
// (upstream_auth type oauth2): the tokens the gateway sends the server
// for that person's agents. The tokens are secrets: stores keep them
// sealed, and nothing answers, logs or audits them.
type Connection struct {
	// ID names the connection in lists (its cursor).
	ID string
	// Subject is the person; Server the registered server.
	Subject, Server string
	// Issuer and ClientID are the authorization server and client that
	// issued the tokens: a server registered with another no longer uses
	// them.
	Issuer, ClientID string
	// UpstreamSubject is who the person is at the upstream (the id token's
	// sub, when the authorization server issued one); "" unknown.
	UpstreamSubject string
	Scopes          []string
	Status          ConnectionStatus
	// Broken says why the connection broke (the refusal's OAuth error).
	Broken string
	// AccessToken, RefreshToken: the upstream's tokens (secrets).
	AccessToken, RefreshToken string
	// ExpiresAt is the access token's expiry (zero: unknown).
	ExpiresAt time.Time
	// CreatedAt is when the person connected; RefreshedAt when its tokens
	// were last refreshed (zero: never).
	CreatedAt, RefreshedAt time.Time
	// Version increases with every write; an update compares it, so that
	// of two instances refreshing, one wins.
	Version int64
}

// String hides the tokens.
func (c Connection) String() string {
	return fmt.Sprintf("connection of %s to %s (%s)", c.Subject, c.Server, c.Status)
}

// ConnectionChange names a change to a connection in an audit intent (never
// its tokens).
func ConnectionChange(action, subject, server string) string {
	return action + " connection of " + subject + " to server " + server
}
