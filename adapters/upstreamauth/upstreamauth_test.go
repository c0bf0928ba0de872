package upstreamauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// as is an authorization server on 127.0.0.1 that serves the documents
// each test sets and records the token and revocation requests it gets.
type as struct {
	srv      *httptest.Server
	mu       sync.Mutex
	docs     map[string]any // path → JSON document
	forms    []url.Values   // token requests, in order
	basic    []string       // their Basic user:password
	revoked  []url.Values
	token    func(form url.Values) (int, any)
	key      *ecdsa.PrivateKey
	clientID string
}

func newAS(t *testing.T) *as {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	a := &as{docs: map[string]any{}, key: key, clientID: "agentauth"}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *as) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/token":
		_ = r.ParseForm()
		a.forms = append(a.forms, r.PostForm)
		u, p, _ := r.BasicAuth()
		a.basic = append(a.basic, u+":"+p)
		st, body := a.token(r.PostForm)
		w.WriteHeader(st)
		_ = json.NewEncoder(w).Encode(body)
	case "/revoke":
		_ = r.ParseForm()
		a.revoked = append(a.revoked, r.PostForm)
	case "/jwks":
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &a.key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	default:
		doc, ok := a.docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(doc)
	}
}

// metadata is the authorization server's metadata for issuer.
func (a *as) metadata(issuer string, revocation bool) map[string]any {
	m := map[string]any{"issuer": issuer, "authorization_endpoint": a.srv.URL + "/authorize", "token_endpoint": a.srv.URL + "/token",
		"jwks_uri": a.srv.URL + "/jwks", "code_challenge_methods_supported": []string{"S256"}}
	if revocation {
		m["revocation_endpoint"] = a.srv.URL + "/revoke"
	}
	return m
}

func (a *as) idToken(t *testing.T, issuer, subject string) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: a.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	raw, err := jwt.Signed(signer).Claims(jwt.Claims{Issuer: issuer, Subject: subject, Audience: jwt.Audience{a.clientID},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour))}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func newAuthorizer(t *testing.T, cfg Config) *Authorizer {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func server(endpoint string, u domain.UpstreamAuth) domain.Server {
	return domain.Server{Name: "gh", URL: "https://gh.example/mcp", Endpoint: endpoint, UpstreamAuth: &u}
}

// TestDiscover: RFC 8414's document first (the issuer's path inserted),
// then OpenID discovery; the document must name the issuer; with no
// issuer registered, the endpoint's RFC 9728 metadata names it and the
// resource (which must be the endpoint's own).
func TestDiscover(t *testing.T) {
	a := newAS(t)
	issuer := a.srv.URL + "/tenant1"
	a.docs["/.well-known/oauth-authorization-server/tenant1"] = a.metadata(issuer, true)
	oidcIssuer := a.srv.URL + "/realms/x/"
	a.docs["/realms/x/.well-known/openid-configuration"] = a.metadata(oidcIssuer, false)
	a.docs["/.well-known/oauth-authorization-server/liar"] = a.metadata(a.srv.URL+"/someone-else", false)
	endpoint := a.srv.URL + "/mcp"
	a.docs["/.well-known/oauth-protected-resource/mcp"] = map[string]any{"resource": endpoint, "authorization_servers": []string{issuer}}
	a.docs["/.well-known/oauth-protected-resource/other"] = map[string]any{"resource": "https://elsewhere.example/mcp", "authorization_servers": []string{issuer}}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gh-secret"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	az := newAuthorizer(t, Config{CredentialsDir: dir, Issuer: oidcIssuer, ClientID: "agentauth-oidc", ClientSecret: "oidc-secret"})
	tests := []struct {
		name     string
		sv       domain.Server
		want     ports.UpstreamAS
		wantErr  error
		errWords string
	}{
		{"RFC 8414, path inserted", server(endpoint, domain.UpstreamAuth{Type: domain.UpstreamOAuth2, Issuer: issuer, ClientID: "agentauth", ClientSecret: "gh-secret", Scopes: []string{"repo"}}),
			ports.UpstreamAS{Issuer: issuer, AuthURL: a.srv.URL + "/authorize", TokenURL: a.srv.URL + "/token", RevocationURL: a.srv.URL + "/revoke",
				JWKSURL: a.srv.URL + "/jwks", ClientID: "agentauth", ClientSecret: "s3cret", Scopes: []string{"repo"}, Resource: endpoint}, nil, ""},
		{"OpenID discovery, a trailing slash", server(a.srv.URL+"/none", domain.UpstreamAuth{Type: domain.UpstreamOAuth2, Issuer: oidcIssuer, ClientID: "c"}),
			ports.UpstreamAS{Issuer: oidcIssuer, AuthURL: a.srv.URL + "/authorize", TokenURL: a.srv.URL + "/token", JWKSURL: a.srv.URL + "/jwks", ClientID: "c"}, nil, ""},
		{"from the protected-resource metadata", server(endpoint, domain.UpstreamAuth{Type: domain.UpstreamOAuth2, ClientID: "c"}),
			ports.UpstreamAS{Issuer: issuer, AuthURL: a.srv.URL + "/authorize", TokenURL: a.srv.URL + "/token", RevocationURL: a.srv.URL + "/revoke",
				JWKSURL: a.srv.URL + "/jwks", ClientID: "c", Resource: endpoint}, nil, ""},
		{"token exchange at agentauth's provider", server(endpoint, domain.UpstreamAuth{Type: domain.UpstreamTokenExchange, Audience: "api"}),
			ports.UpstreamAS{Issuer: oidcIssuer, AuthURL: a.srv.URL + "/authorize", TokenURL: a.srv.URL + "/token", JWKSURL: a.srv.URL + "/jwks",
				ClientID: "agentauth-oidc", ClientSecret: "oidc-secret", Audience: "api"}, nil, ""},
		{"a document naming another issuer", server(endpoint, domain.UpstreamAuth{Type: domain.UpstreamOAuth2, Issuer: a.srv.URL + "/liar", ClientID: "c"}),
			ports.UpstreamAS{}, domain.ErrUnavailable, "someone-else"},
		{"metadata of another resource", server(a.srv.URL+"/other", domain.UpstreamAuth{Type: domain.UpstreamOAuth2, ClientID: "c"}),
			ports.UpstreamAS{}, domain.ErrUnavailable, "elsewhere.example"},
		{"no metadata and no issuer", server(a.srv.URL+"/none", domain.UpstreamAuth{Type: domain.UpstreamOAuth2, ClientID: "c"}),
			ports.UpstreamAS{}, domain.ErrUnavailable, "names no issuer"},
		{"a secret file missing", server(endpoint, domain.UpstreamAuth{Type: domain.UpstreamOAuth2, Issuer: issuer, ClientID: "c", ClientSecret: "nope"}),
			ports.UpstreamAS{}, domain.ErrUnavailable, "client_secret nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := az.Discover(t.Context(), tt.sv)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errWords) {
					t.Errorf("Discover = %v, want %v saying %q", err, tt.wantErr, tt.errWords)
				}
				return
			}
			if err != nil || !sameAS(got, tt.want) {
				t.Errorf("Discover = %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}
}

func sameAS(a, b ports.UpstreamAS) bool {
	return a.Issuer == b.Issuer && a.AuthURL == b.AuthURL && a.TokenURL == b.TokenURL && a.RevocationURL == b.RevocationURL &&
		a.JWKSURL == b.JWKSURL && a.ClientID == b.ClientID && a.ClientSecret == b.ClientSecret && strings.Join(a.Scopes, " ") == strings.Join(b.Scopes, " ") &&
		a.Resource == b.Resource && a.Audience == b.Audience
}

// TestCodeFlow: the authorization request carries PKCE S256, state, the
// redirect URI, the scopes and the resource; the code is redeemed with
// its verifier, the resource and HTTP Basic client authentication; the id
// token's sub is read only once it verifies.
func TestCodeFlow(t *testing.T) {
	a := newAS(t)
	issuer := a.srv.URL
	a.docs["/.well-known/oauth-authorization-server"] = a.metadata(issuer, true)
	az := newAuthorizer(t, Config{})
	as := ports.UpstreamAS{Issuer: issuer, AuthURL: a.srv.URL + "/authorize", TokenURL: a.srv.URL + "/token", RevocationURL: a.srv.URL + "/revoke",
		JWKSURL: a.srv.URL + "/jwks", ClientID: "agentauth", ClientSecret: "s3cret:/", Scopes: []string{"openid", "repo"}, Resource: "https://gh.example/mcp"}
	const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	u, err := url.Parse(az.AuthCodeURL(as, "the-state", verifier, "https://agentauth.example/connect/gh/callback"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(verifier))
	q := u.Query()
	for k, want := range map[string]string{"response_type": "code", "client_id": "agentauth", "state": "the-state", "code_challenge_method": "S256",
		"code_challenge": base64.RawURLEncoding.EncodeToString(sum[:]), "redirect_uri": "https://agentauth.example/connect/gh/callback",
		"scope": "openid repo", "resource": "https://gh.example/mcp"} {
		if q.Get(k) != want {
			t.Errorf("authorization request %s = %q, want %q", k, q.Get(k), want)
		}
	}
	idToken := a.idToken(t, issuer, "alice-upstream")
	a.token = func(url.Values) (int, any) {
		return 200, map[string]any{"access_token": "AT1", "refresh_token": "RT1", "token_type": "Bearer", "expires_in": 300, "scope": "openid repo", "id_token": idToken}
	}
	toks, err := az.ExchangeCode(t.Context(), as, "the-code", verifier, "https://agentauth.example/connect/gh/callback")
	if err != nil || toks.AccessToken != "AT1" || toks.RefreshToken != "RT1" || toks.Subject != "alice-upstream" || strings.Join(toks.Scopes, " ") != "openid repo" ||
		time.Until(toks.Expiry) < 4*time.Minute {
		t.Fatalf("ExchangeCode = %+v, %v", toks, err)
	}
	form := a.forms[0]
	for k, want := range map[string]string{"grant_type": "authorization_code", "code": "the-code", "code_verifier": verifier, "resource": "https://gh.example/mcp",
		"redirect_uri": "https://agentauth.example/connect/gh/callback"} {
		if form.Get(k) != want {
			t.Errorf("token request %s = %q, want %q", k, form.Get(k), want)
		}
	}
	if a.basic[0] != "agentauth:s3cret%3A%2F" || form.Get("client_secret") != "" {
		t.Errorf("client authentication: Basic %q, form secret %q; want Basic with each part form-encoded", a.basic[0], form.Get("client_secret"))
	}

	// An id token signed by someone else does not verify: no subject is
	// taken from it.
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	forged := (&as2{a: a, key: other}).idToken(t, issuer, "mallory")
	a.token = func(url.Values) (int, any) {
		return 200, map[string]any{"access_token": "AT2", "token_type": "Bearer", "id_token": forged}
	}
	if _, err := az.ExchangeCode(t.Context(), as, "code-2", verifier, "https://agentauth.example/connect/gh/callback"); !errors.Is(err, domain.ErrUnauthenticated) {
		t.Errorf("a forged id token = %v, want ErrUnauthenticated", err)
	}
}

// as2 signs with another key under the same kid.
type as2 struct {
	a   *as
	key *ecdsa.PrivateKey
}

func (s *as2) idToken(t *testing.T, issuer, subject string) string {
	keep := s.a.key
	s.a.key = s.key
	defer func() { s.a.key = keep }()
	return s.a.idToken(t, issuer, subject)
}

// TestRefreshRevokeExchange: a refused refresh is an UpstreamRefusal with
// its OAuth error, a server error is the server out of reach; revocation
// posts each token with its hint (none offered: false); an exchange asks
// RFC 8693's grant with the subject token and audience, and refuses a
// token of another type.
func TestRefreshRevokeExchange(t *testing.T) {
	a := newAS(t)
	az := newAuthorizer(t, Config{})
	as := ports.UpstreamAS{Issuer: a.srv.URL, TokenURL: a.srv.URL + "/token", RevocationURL: a.srv.URL + "/revoke", ClientID: "agentauth",
		ClientSecret: "s3cret", Audience: "billing-api", Scopes: []string{"billing"}}

	a.token = func(f url.Values) (int, any) {
		if f.Get("refresh_token") == "RT-good" {
			return 200, map[string]any{"access_token": "AT-new", "refresh_token": "RT-next", "token_type": "Bearer", "expires_in": 60}
		}
		return 400, map[string]any{"error": "invalid_grant", "error_description": "the refresh token was used"}
	}
	toks, err := az.Refresh(t.Context(), as, "RT-good")
	if err != nil || toks.AccessToken != "AT-new" || toks.RefreshToken != "RT-next" {
		t.Errorf("Refresh = %+v, %v", toks, err)
	}
	var refusal *ports.UpstreamRefusal
	if _, err := az.Refresh(t.Context(), as, "RT-used"); !errors.As(err, &refusal) || refusal.Code != "invalid_grant" {
		t.Errorf("a refused refresh = %v, want an UpstreamRefusal invalid_grant", err)
	}
	a.token = func(url.Values) (int, any) { return 502, "bad gateway" }
	if _, err := az.Refresh(t.Context(), as, "RT-good"); !errors.Is(err, domain.ErrUnavailable) || errors.As(err, &refusal) {
		t.Errorf("a server error = %v, want ErrUnavailable", err)
	}

	if ok, err := az.Revoke(t.Context(), as, "RT-next", "refresh_token"); !ok || err != nil {
		t.Errorf("Revoke = %v, %v", ok, err)
	}
	if got := a.revoked[0]; got.Get("token") != "RT-next" || got.Get("token_type_hint") != "refresh_token" {
		t.Errorf("revocation request: %v", got)
	}
	none := as
	none.RevocationURL = ""
	if ok, err := az.Revoke(t.Context(), none, "RT-next", "refresh_token"); ok || err != nil {
		t.Errorf("Revoke without an endpoint = %v, %v; want false", ok, err)
	}

	a.token = func(f url.Values) (int, any) {
		return 200, map[string]any{"access_token": "AT-billing", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "token_type": "Bearer", "expires_in": 120}
	}
	toks, err = az.Exchange(t.Context(), as, "person-token")
	if err != nil || toks.AccessToken != "AT-billing" {
		t.Fatalf("Exchange = %+v, %v", toks, err)
	}
	form := a.forms[len(a.forms)-1]
	for k, want := range map[string]string{"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": "person-token",
		"subject_token_type": "urn:ietf:params:oauth:token-type:access_token", "requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
		"audience": "billing-api", "scope": "billing"} {
		if form.Get(k) != want {
			t.Errorf("exchange request %s = %q, want %q", k, form.Get(k), want)
		}
	}
	a.token = func(url.Values) (int, any) {
		return 200, map[string]any{"access_token": "x", "issued_token_type": "urn:ietf:params:oauth:token-type:refresh_token", "token_type": "N_A"}
	}
	if _, err := az.Exchange(t.Context(), as, "person-token"); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("an exchange issuing a refresh token = %v, want ErrUnavailable", err)
	}
}
