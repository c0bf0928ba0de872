// Package agenttoken signs agentauth's agent tokens: JWTs (go-jose) signed
// with EdDSA under an Ed25519 key kept like the audit checkpoint key, each
// naming its key by its RFC 7638 thumbprint (kid). Rotation overlaps: the
// previous key keeps verifying, and stays in the published key set, until
// a configured time, after which tokens it signed are refused everywhere
// the set is read again.
//
// A token verified once is remembered, by the SHA-256 of its text, until
// it expires (or the previous key's overlap ends, whichever is first), so a
// busy agent's calls cost one signature check, not one each. Only what the
// signature proves is remembered: whether the session and agents it names
// still stand is read on every call (app.AgentTokens).
package agenttoken

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/wire"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/agentauth/agentauth/adapters/auditsign"
	"github.com/agentauth/agentauth/agentverify"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/secretfile"
	"github.com/agentauth/agentauth/ports"
)

// Settings configure the signer.
type Settings struct {
	// Issuer is the iss of every token: agentauth's public URL.
	Issuer string
	// Key is the signing key's seed (SERVICE_AGENT_TOKENS_SIGNING_KEY, or
	// read from auth.agentTokens.signingKeyFile); empty: the key at
	// {DataDir}/secrets/agent-token-signing.key, created on first start
	// (SQLite mode only: with a database, config requires the setting, as
	// every instance must sign and verify with the one key).
	Key     string
	DataDir string
	// PreviousKey is the seed of the key rotated out; it verifies until
	// PreviousUntil.
	PreviousKey   string
	PreviousUntil time.Time
	// Now replaces time.Now, for tests.
	Now func() time.Time
}

// Set provides the signer as the port.
var Set = wire.NewSet(New, wire.Bind(new(ports.AgentTokenSigner), new(*Signer)))

// DefaultKeyPath is where the key is created when none is configured.
func DefaultKeyPath(dataDir string) string {
	return filepath.Join(dataDir, "secrets", "agent-token-signing.key")
}

// Signer signs with the current key and verifies with the current and,
// during the overlap, the previous one.
type Signer struct {
	issuer   string
	current  jose.JSONWebKey // public
	previous *jose.JSONWebKey
	until    time.Time
	signer   jose.Signer
	verifier *agentverify.Verifier
	now      func() time.Time
	// seed is the current key's, for DeriveKey.
	seed     []byte
	verified *lru.Cache[[sha256.Size]byte, verified]
}

// verified is a token that passed Verify, good until until.
type verified struct {
	grant domain.AgentGrant
	until time.Time
}

// maxVerified bounds the tokens remembered (a few hundred bytes each); past
// it the least recently used is forgotten, and verified again if it comes
// back.
const maxVerified = 8192

var _ ports.AgentTokenSigner = (*Signer)(nil)

// New loads (or creates) the keys.
func New(s Settings) (*Signer, error) {
	if s.Now == nil {
		s.Now = time.Now
	}
	priv, err := loadKey(s)
	if err != nil {
		return nil, err
	}
	cur, err := publicJWK(priv)
	if err != nil {
		return nil, err
	}
	sg := &Signer{issuer: s.Issuer, current: cur, now: s.Now, seed: priv.Seed()}
	if sg.verified, err = lru.New[[sha256.Size]byte, verified](maxVerified); err != nil {
		return nil, fmt.Errorf("agent-token cache: %w", err)
	}
	if s.PreviousKey != "" {
		prev, err := auditsign.ParseSeed(s.PreviousKey)
		if err != nil {
			return nil, fmt.Errorf("auth.agentTokens.previousKeyFile: %w", err)
		}
		pj, err := publicJWK(prev)
		if err != nil {
			return nil, err
		}
		sg.previous, sg.until = &pj, s.PreviousUntil
	}
	sg.signer, err = jose.NewSigner(jose.SigningKey{Algorithm: agentverify.Algorithm, Key: jose.JSONWebKey{Key: priv, KeyID: cur.KeyID}},
		(&jose.SignerOptions{}).WithType(agentverify.TokenType))
	if err != nil {
		return nil, fmt.Errorf("agent-token signer: %w", err)
	}
	sg.verifier, err = agentverify.ForIssuer(s.Issuer, sg, agentverify.WithClock(s.Now))
	if err != nil {
		return nil, fmt.Errorf("auth.agentTokens.issuer: %w", err)
	}
	return sg, nil
}

// loadKey parses the configured seed, or reads the default key file,
// creating it (0600 in a 0700 folder) as the audit signing key is.
func loadKey(s Settings) (ed25519.PrivateKey, error) {
	if s.Key != "" {
		key, err := auditsign.ParseSeed(s.Key)
		if err != nil {
			return nil, fmt.Errorf("auth.agentTokens.signingKeyFile / SERVICE_AGENT_TOKENS_SIGNING_KEY: %w", err)
		}
		return key, nil
	}
	path := DefaultKeyPath(s.DataDir)
	text, _, err := secretfile.LoadOrCreate(path)
	if err != nil {
		return nil, fmt.Errorf("agent-token signing key in the data folder (dataDir / SERVICE_DATA_DIR; auth.agentTokens.signingKeyFile / SERVICE_AGENT_TOKENS_SIGNING_KEY_FILE names another file): %w", err)
	}
	key, err := auditsign.ParseSeed(text)
	if err != nil {
		return nil, fmt.Errorf("agent-token signing key %s: %w", path, err)
	}
	return key, nil
}

func publicJWK(priv ed25519.PrivateKey) (jose.JSONWebKey, error) {
	k := jose.JSONWebKey{Key: priv.Public(), Algorithm: string(agentverify.Algorithm), Use: "sig"}
	tp, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		return jose.JSONWebKey{}, fmt.Errorf("agent-token key thumbprint: %w", err)
	}
	k.KeyID = base64.RawURLEncoding.EncodeToString(tp)
	return k, nil
}

// Issuer is the iss of the tokens.
func (s *Signer) Issuer() string { return s.issuer }

// DeriveKey derives a 32-byte key for purpose from the current signing
// key (HKDF-SHA256): every instance that signs with the one key derives
// the same, and rotating the signing key changes it.
func (s *Signer) DeriveKey(purpose string) ([]byte, error) {
	return hkdf.Key(sha256.New, s.seed, nil, "agentauth "+purpose, 32)
}

// JWKS is the public key set in force: the current key and, until the
// overlap ends, the previous one.
func (s *Signer) JWKS() jose.JSONWebKeySet {
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{s.current}}
	if s.previous != nil && s.now().Before(s.until) {
		set.Keys = append(set.Keys, *s.previous)
	}
	return set
}

// Key finds a key of the set in force (agentverify.Keys).
func (s *Signer) Key(_ context.Context, kid string) (*jose.JSONWebKey, error) {
	for _, k := range s.JWKS().Keys {
		if k.KeyID == kid {
			return &k, nil
		}
	}
	return nil, nil
}

// Sign signs g with the current key.
func (s *Signer) Sign(g domain.AgentGrant) (string, error) {
	client := "" // a grant without agents is refused where it is verified
	if len(g.Chain) > 0 {
		client = g.Agent()
	}
	c := agentverify.Claims{
		Claims: jwt.Claims{Issuer: s.issuer, Subject: g.Subject, Audience: jwt.Audience{g.Audience}, ID: g.ID,
			IssuedAt: jwt.NewNumericDate(g.IssuedAt), NotBefore: jwt.NewNumericDate(g.IssuedAt), Expiry: jwt.NewNumericDate(g.Expires)},
		ClientID: client, Scope: strings.Join(g.Tools, " "),
		Act: agentverify.ActorChain(g.Chain), Session: g.Session, Mode: string(g.Mode), Ask: g.Ask,
	}
	tok, err := jwt.Signed(s.signer).Claims(c).Serialize()
	if err != nil {
		return "", fmt.Errorf("sign agent token: %w", err)
	}
	return tok, nil
}

// Verify checks a token this service signed, for any audience.
func (s *Signer) Verify(ctx context.Context, token string) (domain.AgentGrant, error) {
	key := sha256.Sum256([]byte(token))
	if v, ok := s.verified.Get(key); ok {
		if s.now().Before(v.until) {
			return cloneGrant(v.grant), nil
		}
		s.verified.Remove(key)
	}
	g, err := s.verify(ctx, token)
	if err != nil {
		return g, err
	}
	until := g.Expires
	if s.previous != nil && s.until.Before(until) {
		until = s.until // the token may be the previous key's
	}
	s.verified.Add(key, verified{grant: cloneGrant(g), until: until})
	return g, nil
}

// cloneGrant copies g's slices, so that no caller shares the remembered ones.
func cloneGrant(g domain.AgentGrant) domain.AgentGrant {
	g.Chain, g.Tools, g.Ask = slices.Clone(g.Chain), slices.Clone(g.Tools), slices.Clone(g.Ask)
	return g
}

// verify checks token's signature and claims.
func (s *Signer) verify(ctx context.Context, token string) (domain.AgentGrant, error) {
	t, err := s.verifier.Verify(ctx, token)
	if err != nil {
		var ve *agentverify.Error
		if errors.As(err, &ve) {
			return domain.AgentGrant{}, domain.RefuseToken(ve.Code, domain.ErrUnauthenticated, "%v", ve.Err)
		}
		return domain.AgentGrant{}, err
	}
	mode, err := domain.ParseSessionMode(t.Mode)
	if err != nil {
		return domain.AgentGrant{}, domain.RefuseToken(agentverify.ReasonClaims, domain.ErrUnauthenticated, "mode %q", t.Mode)
	}
	aud := ""
	if len(t.Audience) == 1 {
		aud = t.Audience[0]
	}
	return domain.AgentGrant{ID: t.ID, Subject: t.User, Chain: t.Agents, Audience: aud, Session: t.Session, Mode: mode,
		Tools: t.Tools, Ask: t.Ask, IssuedAt: t.IssuedAt, Expires: t.Expires}, nil
}
