package keycloak

import (
	"cmp"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"go.uber.org/zap"
)

const (
	testClient = "agentauth"
	testSecret = "s3cret-of-the-test-client"
)

// fakeOP is a minimal OpenID provider at Keycloak's URLs for unit tests:
// discovery, JWKS, and a token endpoint for the password and refresh
// grants. Tests mint tokens with sign; the e2e suite runs against a real
// OpenID provider library instead.
type fakeOP struct {
	t      testing.TB
	srv    *httptest.Server
	issuer string

	mu   sync.Mutex
	key  *rsa.PrivateKey
	kid  string
	old  []jose.JSONWebKey // published too (rotation overlap)
	now  time.Time
	down bool // JWKS answers 503

	jwksHits  atomic.Int32
	tokenHits atomic.Int32
	// discoveryIssuer overrides the issuer the discovery document names.
	discoveryIssuer string
	roles           []any // realm roles put in tokens
	// extra claims put in every token
	extra map[string]any
	// public, when set, is the issuer the provider's tokens and discovery
	// document name (its public URL), while the server is reached at
	// issuer (the internal URL).
	public string

	// A generic provider's ways (TestGeneric…): opaque access tokens
	// answered by introspection; a userinfo endpoint; grant_types_supported
	// (nil: not advertised); no typ claim and this header typ on access
	// tokens; no refresh token; the nonce and at_hash put in id tokens.
	opaque          bool
	scopes          []string // scopes_supported
	noIntrospection bool     // the document lists no introspection endpoint
	userinfo        map[string]any
	grants          []string
	accessHeader    string
	noTypClaim      bool
	noRefresh       bool
	nonce           string
	atHash          string
	introspectHits  atomic.Int32
	userinfoHits    atomic.Int32
	inactive        bool // introspection answers active: false
	// tokenError, when set, is the OAuth error every grant answers, with
	// tokenStatus (default 400).
	tokenError  string
	tokenStatus int
}

// tokenIssuer is the issuer tokens and the discovery document name.
func (op *fakeOP) tokenIssuer() string {
	if op.public != "" {
		return op.public
	}
	return op.issuer
}

func newFakeOP(t testing.TB) *fakeOP {
	t.Helper()
	return newFakeOPAt(t, "/realms/agents")
}

// newFakeOPAt serves the provider with issuer path path (Keycloak's
// /realms/<realm>, or any other for a generic provider).
func newFakeOPAt(t testing.TB, path string) *fakeOP {
	t.Helper()
	op := &fakeOP{t: t, now: time.Now(), roles: []any{"admin"}}
	op.rotate(false)
	mux := http.NewServeMux()
	op.srv = httptest.NewServer(mux)
	t.Cleanup(op.srv.Close)
	op.issuer = op.srv.URL + path
	path = strings.TrimSuffix(path, "/") // an issuer may end in "/"; its endpoints are below it
	mux.HandleFunc(path+"/.well-known/openid-configuration", op.discovery)
	mux.HandleFunc(path+"/protocol/openid-connect/certs", op.certs)
	mux.HandleFunc(path+"/protocol/openid-connect/token", op.token)
	mux.HandleFunc(path+"/protocol/openid-connect/token/introspect", op.introspect)
	mux.HandleFunc(path+"/protocol/openid-connect/userinfo", op.userinfoEndpoint)
	mux.HandleFunc(path+"/protocol/openid-connect/logout", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	return op
}

// rotate makes a new signing key; keepOld keeps publishing the old one.
func (op *fakeOP) rotate(keepOld bool) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		op.t.Fatal(err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	op.mu.Lock()
	defer op.mu.Unlock()
	if keepOld && op.key != nil {
		op.old = append(op.old, jose.JSONWebKey{Key: &op.key.PublicKey, KeyID: op.kid, Algorithm: "RS256", Use: "sig"})
	}
	op.key, op.kid = key, base64.RawURLEncoding.EncodeToString(b[:])
}

func (op *fakeOP) discovery(w http.ResponseWriter, _ *http.Request) {
	iss := op.tokenIssuer()
	if op.discoveryIssuer != "" {
		iss = op.discoveryIssuer
	}
	base := strings.TrimSuffix(op.tokenIssuer(), "/") + "/protocol/openid-connect"
	doc := map[string]any{
		"issuer":                                iss,
		"authorization_endpoint":                base + "/auth",
		"token_endpoint":                        base + "/token",
		"jwks_uri":                              base + "/certs",
		"end_session_endpoint":                  base + "/logout",
		"introspection_endpoint":                base + "/token/introspect",
		"id_token_signing_alg_values_supported": []string{"RS256", "HS256", "ES256"},
	}
	if op.grants != nil {
		doc["grant_types_supported"] = op.grants
	}
	if op.scopes != nil {
		doc["scopes_supported"] = op.scopes
	}
	if op.noIntrospection {
		delete(doc, "introspection_endpoint")
	}
	if op.userinfo != nil {
		doc["userinfo_endpoint"] = base + "/userinfo"
	}
	_ = json.NewEncoder(w).Encode(doc)
}

// opaqueToken is the access token of a provider with opaque tokens.
const opaqueToken = "opaque-access-token-of-alice"

func (op *fakeOP) introspect(w http.ResponseWriter, r *http.Request) {
	op.introspectHits.Add(1)
	_ = r.ParseForm()
	if id, secret, ok := r.BasicAuth(); !ok || id != testClient || secret != testSecret {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if op.inactive || r.PostForm.Get("token") != opaqueToken {
		_, _ = w.Write([]byte(`{"active":false}`))
		return
	}
	c := op.accessClaims()
	delete(c, "azp")
	c["active"], c["client_id"] = true, testClient
	_ = json.NewEncoder(w).Encode(c)
}

func (op *fakeOP) userinfoEndpoint(w http.ResponseWriter, r *http.Request) {
	op.userinfoHits.Add(1)
	if r.Header.Get("Authorization") == "" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(op.userinfo)
}

func (op *fakeOP) certs(w http.ResponseWriter, _ *http.Request) {
	op.jwksHits.Add(1)
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	keys := append([]jose.JSONWebKey{{Key: &op.key.PublicKey, KeyID: op.kid, Algorithm: "RS256", Use: "sig"}}, op.old...)
	_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: keys})
}

func (op *fakeOP) token(w http.ResponseWriter, r *http.Request) {
	op.tokenHits.Add(1)
	_ = r.ParseForm()
	w.Header().Set("Content-Type", "application/json") // errors too, as Keycloak sends them
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != testClient || secret != testSecret {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"unauthorized_client"}`))
		return
	}
	if op.tokenError != "" {
		w.WriteHeader(cmp.Or(op.tokenStatus, http.StatusBadRequest))
		_, _ = w.Write([]byte(`{"error":"` + op.tokenError + `"}`))
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "password":
		if r.PostForm.Get("username") != "alice" || r.PostForm.Get("password") != "alice-pw" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"Invalid user credentials"}`))
			return
		}
	case "authorization_code":
		if r.PostForm.Get("code") != "code-alice" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
	case "refresh_token":
		if r.PostForm.Get("refresh_token") != "rt-alice" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"Token is not active"}`))
			return
		}
	default:
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	access := opaqueToken
	if !op.opaque {
		ac := op.accessClaims()
		if op.noTypClaim {
			delete(ac, "typ")
		}
		access = op.sign(ac, &signOpts{typ: op.accessHeader})
	}
	idc := op.idClaims(op.nonce)
	if op.atHash != "" {
		idc["at_hash"] = op.atHash
	}
	res := map[string]any{
		"access_token":       access,
		"id_token":           op.sign(idc, nil),
		"refresh_token":      "rt-alice",
		"expires_in":         300,
		"refresh_expires_in": 1800,
		"token_type":         "Bearer",
	}
	if op.noRefresh {
		delete(res, "refresh_token")
		delete(res, "refresh_expires_in")
	}
	_ = json.NewEncoder(w).Encode(res)
}

// atHashOf is the at_hash of an RS256 id token for access (OpenID Connect
// Core 3.1.3.6): the left half of its SHA-256, base64url.
func atHashOf(access string) string {
	sum := sha256.Sum256([]byte(access))
	return base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2])
}

func (op *fakeOP) accessClaims() map[string]any {
	now := op.now
	c := map[string]any{
		"iss": op.tokenIssuer(), "sub": "user-alice", "typ": "Bearer", "azp": testClient, "aud": []any{"account"},
		"exp": now.Add(5 * time.Minute).Unix(), "iat": now.Unix(), "nbf": now.Unix(),
		"preferred_username": "alice", "realm_access": map[string]any{"roles": op.roles},
	}
	maps.Copy(c, op.extra)
	return c
}

func (op *fakeOP) idClaims(nonce string) map[string]any {
	c := op.accessClaims()
	c["typ"], c["aud"] = "ID", testClient
	delete(c, "realm_access") // the spec's common case: roles only in the access token
	if nonce != "" {
		c["nonce"] = nonce
	}
	return c
}

// sign signs claims with the current key (RS256) unless opts say otherwise.
func (op *fakeOP) sign(claims map[string]any, opts *signOpts) string {
	op.t.Helper()
	op.mu.Lock()
	key, kid := any(op.key), op.kid
	op.mu.Unlock()
	alg := jose.RS256
	so := (&jose.SignerOptions{}).WithType("JWT")
	if opts != nil {
		if opts.key != nil {
			key = opts.key
		}
		if opts.alg != "" {
			alg = opts.alg
		}
		if opts.kid != "" {
			kid = opts.kid
		}
		if opts.typ != "" {
			so = (&jose.SignerOptions{}).WithType(jose.ContentType(opts.typ))
		}
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, so)
	if err != nil {
		op.t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := signer.Sign(payload)
	if err != nil {
		op.t.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		op.t.Fatal(err)
	}
	return s
}

type signOpts struct {
	key any
	alg jose.SignatureAlgorithm
	kid string
	typ string
}

// unsigned is an alg=none token.
func unsigned(claims map[string]any) string {
	h, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT"})
	p, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(p) + "."
}

func ecKey(t *testing.T) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// discovered returns a provider of op, discovered.
// The limits every test provider is given (production's come from
// config.Defaults).
const (
	testSkew      = 30 * time.Second
	testTimeout   = 10 * time.Second
	testRefetch   = 30 * time.Second
	testCacheSize = 100
)

func (op *fakeOP) provider(t testing.TB, mut func(*Config)) *Provider {
	t.Helper()
	cfg := Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: op.issuer, ClientID: testClient, ClientSecret: testSecret, RedirectURI: "http://127.0.0.1:1/auth/callback"}
	if mut != nil {
		mut(&cfg)
	}
	p, err := New(cfg, zap.NewNop())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := p.Discover(t.Context()); err != nil {
		t.Fatalf("Discover: %v", err)
	}
	return p
}
