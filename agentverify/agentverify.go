// Package agentverify verifies agentauth's agent tokens in a tool server,
// offline: it fetches agentauth's JSON Web Key Set once (and again only for
// a key id it does not know, at most once per refetch interval), checks the
// signature (EdDSA only), the JWT type (at+jwt, RFC 9068), the issuer, the
// audience (the tool server's own resource URL, as agentauth registered
// it), the lifetime and the claims, and returns who acts: the user, the
// agent and its chain of parent agents, the session, its mode and the
// tools the token may call. Each refusal has its own reason code.
//
// What an offline check cannot see: that the session was closed or
// deleted, the agent removed or the policy changed after the token was
// issued. The token's short lifetime bounds that window; a tool server that
// needs the live answer asks agentauth (POST /oauth2/introspect, or the
// session's tool-calls endpoint with the token).
//
// The package depends on go-jose, golang.org/x/sync and the standard
// library only (its key cache is the module's internal/jwks, shared with
// the OIDC adapter), so a tool server imports it without the service.
package agentverify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Algorithm is the one signature algorithm agent tokens use.
const Algorithm = jose.EdDSA

// MaxChain bounds the nested act claims a token may carry: a user's root
// agent and 32 levels of sub-agents (agentauth's depth cap).
const MaxChain = 33

// TokenType is the JWT "typ" header of agent tokens.
const TokenType = "at+jwt"

// Claims are an agent token's claims as signed. Act is the acting agent;
// its own Act the agent that created it, and so on (RFC 8693 §4.1).
type Claims struct {
	jwt.Claims
	// ClientID is the acting agent (RFC 9068 §2.2).
	ClientID string `json:"client_id"`
	// Scope is the tools the token may call, space-separated (RFC 9068
	// §2.2.3).
	Scope   string `json:"scope"`
	Act     *Actor `json:"act,omitempty"`
	Session string `json:"session_id"`
	Mode    string `json:"mode"`
	// Ask are the tools among Tools whose calls need approval (a tool
	// server asks agentauth for the live decision of those).
	Ask []string `json:"ask_tools,omitempty"`
}

// Actor is one agent of the delegation chain.
type Actor struct {
	Subject string `json:"sub"`
	Act     *Actor `json:"act,omitempty"`
}

// ActorChain builds the nested act claim of agents, root agent first: the
// last agent is the outermost (current) actor.
func ActorChain(agents []string) *Actor {
	var act *Actor
	for _, a := range agents {
		act = &Actor{Subject: a, Act: act}
	}
	return act
}

// Token is a verified agent token.
type Token struct {
	ID       string
	Issuer   string
	Audience []string
	// User is the session's owner, on whose behalf the agents act.
	User string
	// Agents is the delegation chain, the session's root agent first and
	// the acting agent last.
	Agents  []string
	Session string
	Mode    string
	Tools   []string
	// Ask are the tools that need approval: ask agentauth before calling.
	Ask      []string
	IssuedAt time.Time
	Expires  time.Time
}

// Agent is the acting agent: the last of the chain.
func (t Token) Agent() string { return t.Agents[len(t.Agents)-1] }

// Permits reports whether the token lists tool (tool names are compared
// without ASCII case, as agentauth does).
func (t Token) Permits(tool string) bool {
	for _, x := range t.Tools {
		if equalFoldASCII(x, tool) {
			return true
		}
	}
	return false
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// Reason codes of a refused token; Error.Code holds one.
const (
	ReasonMalformed    = "token_malformed"
	ReasonAlgorithm    = "token_algorithm_not_allowed"
	ReasonUnknownKey   = "token_key_unknown"
	ReasonSignature    = "token_signature_invalid"
	ReasonIssuer       = "token_issuer_mismatch"
	ReasonAudience     = "token_audience_mismatch"
	ReasonExpired      = "token_expired"
	ReasonNotYetValid  = "token_not_yet_valid"
	ReasonClaims       = "token_claims_invalid"
	ReasonKeysNotKnown = "token_keys_unavailable"
	// ReasonType: the JWT header typ is not at+jwt (RFC 9068 §4): a JWT
	// of another kind signed with the same key is no access token.
	ReasonType = "token_type_invalid"
)

// Error is a refused token with its reason code.
type Error struct {
	Code string
	Err  error
}

func (e *Error) Error() string { return e.Code + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func refuse(code string, format string, args ...any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// Keys finds a verification key by its id; it returns (nil, nil) for a key
// it does not know.
type Keys interface {
	Key(ctx context.Context, kid string) (*jose.JSONWebKey, error)
}

// Verifier checks tokens of one issuer for one audience.
type Verifier struct {
	issuer   string
	audience string
	keys     Keys
	leeway   time.Duration
	now      func() time.Time
}

// Option adjusts a Verifier.
type Option func(*Verifier)

// WithLeeway tolerates that much clock difference on exp, nbf and iat
// (default 30s).
func WithLeeway(d time.Duration) Option { return func(v *Verifier) { v.leeway = d } }

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) Option { return func(v *Verifier) { v.now = now } }

// New returns a verifier of issuer's tokens for audience: the tool
// server's resource URL in agentauth's canonical form (scheme and host in
// lower case, no default port, no lone "/" path), which is what tokens
// carry as aud. Both must be set.
func New(issuer, audience string, keys Keys, opts ...Option) (*Verifier, error) {
	if issuer == "" || audience == "" || keys == nil {
		return nil, errors.New("agentverify: issuer, audience and keys are required")
	}
	v := &Verifier{issuer: issuer, audience: audience, keys: keys, leeway: 30 * time.Second, now: time.Now}
	for _, o := range opts {
		o(v)
	}
	return v, nil
}

// ForIssuer returns a verifier that accepts the issuer's tokens for any
// audience: for agentauth itself, which checks a presented token (the
// subject of an exchange, an introspection) whatever server it names.
func ForIssuer(issuer string, keys Keys, opts ...Option) (*Verifier, error) {
	v, err := New(issuer, "-", keys, opts...)
	if err != nil {
		return nil, err
	}
	v.audience = ""
	return v, nil
}

var allowed = []jose.SignatureAlgorithm{Algorithm}

// everyAlgorithm tells a token signed otherwise from one that is not a JWS.
var everyAlgorithm = []jose.SignatureAlgorithm{jose.EdDSA, jose.HS256, jose.HS384, jose.HS512, jose.RS256, jose.RS384,
	jose.RS512, jose.ES256, jose.ES384, jose.ES512, jose.PS256, jose.PS384, jose.PS512}

// Verify checks token and returns what it grants, or an *Error naming the
// reason.
func (v *Verifier) Verify(ctx context.Context, token string) (Token, error) {
	tok, err := jose.ParseSignedCompact(token, allowed)
	if err == nil && len(tok.Signatures) != 1 {
		err = errors.New("not one signature")
	}
	if err != nil {
		if _, err2 := jose.ParseSignedCompact(token, everyAlgorithm); err2 == nil {
			return Token{}, refuse(ReasonAlgorithm, "agent tokens are signed with %s only", Algorithm)
		}
		return Token{}, refuse(ReasonMalformed, "not a signed JWT")
	}
	h := tok.Signatures[0].Header
	if h.KeyID == "" {
		return Token{}, refuse(ReasonUnknownKey, "the token names no key (kid)")
	}
	key, err := v.keys.Key(ctx, h.KeyID)
	if err != nil {
		return Token{}, refuse(ReasonKeysNotKnown, "the issuer's keys cannot be read: %v", err)
	}
	if key == nil {
		return Token{}, refuse(ReasonUnknownKey, "key %q is not (or no longer) one of the issuer's", h.KeyID)
	}
	// The signature first, then what it covers: a payload that verifies but
	// does not parse is a claims problem, not a forged signature.
	payload, err := tok.Verify(key.Key)
	if err != nil {
		return Token{}, refuse(ReasonSignature, "the signature does not verify under key %q", h.KeyID)
	}
	if !accessTokenType(h.ExtraHeaders[jose.HeaderType]) {
		return Token{}, refuse(ReasonType, "the JWT header typ is %q, not %s (RFC 9068 §4)", h.ExtraHeaders[jose.HeaderType], TokenType)
	}
	var c Claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return Token{}, refuse(ReasonClaims, "the claims do not parse: %v", err)
	}
	exp := jwt.Expected{Issuer: v.issuer, Time: v.now()}
	if v.audience != "" {
		exp.AnyAudience = jwt.Audience{v.audience}
	}
	if err := c.ValidateWithLeeway(exp, v.leeway); err != nil {
		switch {
		case errors.Is(err, jwt.ErrInvalidIssuer):
			return Token{}, refuse(ReasonIssuer, "issued by %q, not %q", c.Issuer, v.issuer)
		case errors.Is(err, jwt.ErrInvalidAudience):
			return Token{}, refuse(ReasonAudience, "issued for %q, not %q", []string(c.Audience), v.audience)
		case errors.Is(err, jwt.ErrExpired):
			return Token{}, refuse(ReasonExpired, "expired at %s", c.Expiry.Time().UTC().Format(time.RFC3339))
		default:
			return Token{}, refuse(ReasonNotYetValid, "%v", err)
		}
	}
	return tokenOf(c)
}

// accessTokenType reports whether a typ header names an RFC 9068 access
// token: at+jwt, or application/at+jwt, in any case (RFC 7515 §4.1.9).
func accessTokenType(typ any) bool {
	s, ok := typ.(string)
	return ok && (strings.EqualFold(s, TokenType) || strings.EqualFold(s, "application/"+TokenType))
}

// tokenOf checks the claims every agent token carries and flattens them.
func tokenOf(c Claims) (Token, error) {
	if c.Expiry == nil || c.IssuedAt == nil || c.ID == "" || c.Subject == "" || c.ClientID == "" || c.Session == "" || c.Mode == "" || len(c.Audience) == 0 {
		return Token{}, refuse(ReasonClaims, "exp, iat, jti, sub, client_id, aud, session_id and mode are required")
	}
	var agents []string
	for a := c.Act; a != nil; a = a.Act {
		if a.Subject == "" || len(agents) == MaxChain {
			return Token{}, refuse(ReasonClaims, "the act chain must name 1 to %d agents", MaxChain)
		}
		agents = append(agents, a.Subject)
	}
	if len(agents) == 0 {
		return Token{}, refuse(ReasonClaims, "the token names no acting agent (act)")
	}
	if agents[0] != c.ClientID {
		return Token{}, refuse(ReasonClaims, "client_id %q is not the acting agent %q", c.ClientID, agents[0])
	}
	for i, j := 0, len(agents)-1; i < j; i, j = i+1, j-1 {
		agents[i], agents[j] = agents[j], agents[i]
	}
	tools := strings.Fields(c.Scope)
	return Token{ID: c.ID, Issuer: c.Issuer, Audience: c.Audience, User: c.Subject, Agents: agents, Session: c.Session,
		Mode: c.Mode, Tools: tools, Ask: c.Ask, IssuedAt: c.IssuedAt.Time(), Expires: c.Expiry.Time()}, nil
}
