package keycloak

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

func bearer(v string) ports.Credential {
	return ports.Credential{Kind: ports.CredentialBearer, Value: v}
}

func TestAuthenticateBearer(t *testing.T) {
	op := newFakeOP(t)
	a := NewAuthenticator(op.provider(t, nil))
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	with := func(mut func(c map[string]any)) map[string]any {
		c := op.accessClaims()
		mut(c)
		return c
	}
	now := op.now
	tests := []struct {
		name  string
		token string
		ok    bool
	}{
		{"valid access token", op.sign(op.accessClaims(), nil), true},
		{"aud names our client, azp another", op.sign(with(func(c map[string]any) { c["azp"], c["aud"] = "other", []any{testClient} }), nil), true},
		{"expired within the skew", op.sign(with(func(c map[string]any) { c["exp"] = now.Add(-10 * time.Second).Unix() }), nil), true},
		{"no typ claim, at+jwt header", op.sign(with(func(c map[string]any) { delete(c, "typ") }), &signOpts{typ: "at+jwt"}), true},
		{"alg none", unsigned(op.accessClaims()), false},
		{"bad signature (other key, same kid)", op.sign(op.accessClaims(), &signOpts{key: other}), false},
		{"HS256 keyed with the client secret", op.sign(op.accessClaims(), &signOpts{key: []byte(testSecret + testSecret), alg: jose.HS256}), false},
		{"ES256 by an unknown key", op.sign(op.accessClaims(), &signOpts{key: ecKey(t), alg: jose.ES256, kid: "ec-1"}), false},
		{"other issuer", op.sign(with(func(c map[string]any) { c["iss"] = "http://127.0.0.1:1/realms/agents" }), nil), false},
		{"other client", op.sign(with(func(c map[string]any) { c["azp"], c["aud"] = "other-app", []any{"account", "other-app"} }), nil), false},
		{"expired", op.sign(with(func(c map[string]any) { c["exp"] = now.Add(-time.Hour).Unix() }), nil), false},
		{"no exp", op.sign(with(func(c map[string]any) { delete(c, "exp") }), nil), false},
		{"exp not a number", op.sign(with(func(c map[string]any) { c["exp"] = "tomorrow" }), nil), false},
		{"nbf in the future", op.sign(with(func(c map[string]any) { c["nbf"] = now.Add(5 * time.Minute).Unix() }), nil), false},
		{"iat in the future", op.sign(with(func(c map[string]any) { c["iat"] = now.Add(5 * time.Minute).Unix() }), nil), false},
		{"no sub", op.sign(with(func(c map[string]any) { delete(c, "sub") }), nil), false},
		{"id token as Bearer", op.sign(op.idClaims(""), nil), false},
		{"refresh token as Bearer", op.sign(with(func(c map[string]any) { c["typ"] = "Refresh" }), nil), false},
		{"no typ claim, plain JWT header", op.sign(with(func(c map[string]any) { delete(c, "typ") }), nil), false},
		{"not a JWT", "an-api-key-perhaps-0123456789", false},
		{"garbage with dots", "a.b.c", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := a.Authenticate(t.Context(), bearer(tt.token))
			if tt.ok {
				if err != nil {
					t.Fatalf("Authenticate: got %v, want success", err)
				}
				if p.Subject != "user-alice" || !slices.Equal(p.Roles, []domain.Role{domain.RoleAdmin}) || p.RoleSource != domain.TokenAccess || p.Method != domain.MethodOIDC {
					t.Errorf("principal: got %+v, want user-alice ADMIN from access_token", p)
				}
				return
			}
			if !errors.Is(err, domain.ErrUnauthenticated) {
				t.Fatalf("Authenticate: got %v, want ErrUnauthenticated", err)
			}
		})
	}
	t.Run("cookie credential refused", func(t *testing.T) {
		if _, err := a.Authenticate(t.Context(), ports.Credential{Kind: ports.CredentialCookie, Value: "x"}); !errors.Is(err, domain.ErrUnauthenticated) {
			t.Errorf("got %v, want ErrUnauthenticated", err)
		}
	})
	if n := a.cache.Len(); n != 4 {
		t.Errorf("cache holds %d tokens, want the 4 accepted ones (failures are never cached)", n)
	}
}

func TestUnknownKidRefetchIsRateLimited(t *testing.T) {
	op := newFakeOP(t)
	now := time.Now()
	clock := func() time.Time { return now }
	p := op.provider(t, func(c *Config) { c.Now = clock })
	a := NewAuthenticator(p)
	start := op.jwksHits.Load()
	now = now.Add(31 * time.Second) // past the fetch made at discovery

	forged := op.sign(op.accessClaims(), &signOpts{kid: "made-up"})
	for i := 0; i < 20; i++ {
		if _, err := a.Authenticate(t.Context(), bearer(forged)); !errors.Is(err, domain.ErrUnauthenticated) {
			t.Fatalf("unknown kid: got %v, want ErrUnauthenticated", err)
		}
	}
	if got := op.jwksHits.Load() - start; got != 1 {
		t.Errorf("JWKS fetches for 20 tokens with an unknown kid within 30s: got %d, want 1", got)
	}

	// The provider rotates its key: a token by the new key is accepted once
	// the interval has passed, with one more fetch.
	op.rotate(true)
	fresh := op.sign(op.accessClaims(), nil)
	if _, err := a.Authenticate(t.Context(), bearer(fresh)); err == nil {
		t.Fatalf("new key accepted before a refetch was allowed")
	}
	now = now.Add(31 * time.Second)
	if _, err := a.Authenticate(t.Context(), bearer(fresh)); err != nil {
		t.Fatalf("token of the rotated key after the interval: %v", err)
	}
	if got := op.jwksHits.Load() - start; got != 2 {
		t.Errorf("JWKS fetches: got %d, want 2", got)
	}
}

func TestCachedKeysWorkWhileJWKSIsDown(t *testing.T) {
	op := newFakeOP(t)
	a := NewAuthenticator(op.provider(t, nil))
	a.noCache = true // prove the keys, not the token cache, carry it
	op.mu.Lock()
	op.down = true
	op.mu.Unlock()
	if _, err := a.Authenticate(t.Context(), bearer(op.sign(op.accessClaims(), nil))); err != nil {
		t.Fatalf("with the JWKS endpoint down, a token of a cached key: got %v, want success", err)
	}
}

func TestDiscovery(t *testing.T) {
	t.Run("issuer mismatch refused", func(t *testing.T) {
		op := newFakeOP(t)
		op.discoveryIssuer = "https://evil.example/realms/agents"
		p, err := New(Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: op.issuer, ClientID: testClient, ClientSecret: testSecret}, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Discover(t.Context()); err == nil || !strings.Contains(err.Error(), "issuer") {
			t.Fatalf("Discover: got %v, want an issuer mismatch", err)
		}
		if err := p.Ready(); !errors.Is(err, domain.ErrUnavailable) {
			t.Errorf("Ready: got %v, want ErrUnavailable", err)
		}
		if _, err := p.PasswordGrant(t.Context(), "alice", "alice-pw"); !errors.Is(err, domain.ErrUnavailable) {
			t.Errorf("PasswordGrant before discovery: got %v, want ErrUnavailable", err)
		}
		if got := p.Checks()["oidc_discovery"]; !strings.HasPrefix(got, "failing") {
			t.Errorf("Checks: got %q, want failing", got)
		}
	})
	t.Run("retries with backoff until the provider answers", func(t *testing.T) {
		// Discovery is real HTTP, outside any synctest bubble: the
		// backoff's waits are handed to the test instead of slept.
		op := newFakeOP(t)
		var fail atomic.Bool // read by the server's goroutines
		fail.Store(true)
		h := op.srv.Config.Handler
		op.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if fail.Load() {
				http.Error(w, "starting", http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(w, r)
		})
		p, err := New(Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: op.issuer, ClientID: testClient, ClientSecret: testSecret}, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		waits := make(chan time.Duration)
		tick := make(chan time.Time)
		p.after = func(d time.Duration) <-chan time.Time { waits <- d; return tick }
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan struct{})
		go func() { defer close(done); p.Run(ctx) }()

		want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
		for i, w := range want {
			if got := <-waits; got != w { // discovery failed: Run waits
				t.Errorf("wait %d: got %s, want %s", i+1, got, w)
			}
			if err := p.Ready(); err == nil {
				t.Fatalf("Ready while the provider fails: got nil")
			}
			if i == len(want)-1 {
				fail.Store(false)
			}
			tick <- time.Time{}
		}
		<-done // Run returns once discovery succeeded
		if err := p.Ready(); err != nil {
			t.Fatalf("Ready after the provider came back: %v", err)
		}
		if got := p.Algorithms(); !slices.Equal(got, []string{"RS256", "ES256"}) {
			t.Errorf("Algorithms: got %v, want [RS256 ES256] (HS256 never)", got)
		}
	})
	t.Run("bad issuer form", func(t *testing.T) {
		for _, iss := range []string{"", "https://kc.example", "https://kc.example/realms/", "https://kc.example/realms/a/", "ftp://kc/realms/a"} {
			if _, err := New(Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: iss, ClientID: testClient, ClientSecret: testSecret}, zap.NewNop()); !errors.Is(err, domain.ErrInvalidInput) {
				t.Errorf("New(issuer %q): got %v, want ErrInvalidInput", iss, err)
			}
		}
	})
}

func TestInternalCA(t *testing.T) {
	op := newFakeOP(t)
	tlsSrv := httptest.NewTLSServer(op.srv.Config.Handler)
	defer tlsSrv.Close()
	issuer := tlsSrv.URL + "/realms/agents"
	op.issuer = issuer

	p, err := New(Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: issuer, ClientID: testClient, ClientSecret: testSecret}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Discover(t.Context()); err == nil {
		t.Fatalf("Discover with an untrusted certificate: got nil")
	}
	if err := p.Ready(); !errors.Is(err, domain.ErrUnauthenticated) {
		t.Errorf("Ready with an untrusted certificate: got %v, want ErrUnauthenticated (the spec's 401)", err)
	}
	if got := p.Checks()["oidc_tls"]; !strings.Contains(got, "SERVICE_OIDC_CA_FILE") {
		t.Errorf("Checks[oidc_tls]: got %q, want it to name SERVICE_OIDC_CA_FILE", got)
	}

	caFile := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw})
	if err := os.WriteFile(caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err = New(Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: issuer, ClientID: testClient, ClientSecret: testSecret, CAFiles: []string{caFile}}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Discover(t.Context()); err != nil {
		t.Fatalf("Discover with the CA file: %v", err)
	}

	empty := filepath.Join(t.TempDir(), "empty.pem")
	_ = os.WriteFile(empty, []byte("not a certificate"), 0o600)
	if _, err := New(Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: issuer, ClientID: testClient, ClientSecret: testSecret, CAFiles: []string{empty}}, zap.NewNop()); err == nil {
		t.Errorf("New with a CA file holding no certificate: got nil error")
	}
}

func TestPasswordGrantRefreshLogout(t *testing.T) {
	op := newFakeOP(t)
	p := op.provider(t, nil)
	ctx := t.Context()
	ts, err := p.PasswordGrant(ctx, "alice", "alice-pw")
	if err != nil {
		t.Fatalf("PasswordGrant: %v", err)
	}
	if ts.Subject != "user-alice" || ts.Username != "alice" || ts.Roles.Source != domain.TokenAccess ||
		!slices.Equal(ts.Roles.Roles, []domain.Role{domain.RoleAdmin}) || ts.RefreshExpiry.IsZero() {
		t.Errorf("PasswordGrant: got %+v", ts)
	}
	if _, err := p.PasswordGrant(ctx, "alice", "wrong"); !errors.Is(err, domain.ErrUnauthenticated) {
		t.Errorf("wrong password: got %v, want ErrUnauthenticated", err)
	}

	op.roles = []any{"user"} // role changed at the provider
	ts, err = p.Refresh(ctx, "rt-alice")
	if err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	if !slices.Equal(ts.Roles.Roles, []domain.Role{domain.RoleUser}) {
		t.Errorf("roles after refresh: got %v, want [USER]", ts.Roles.Roles)
	}
	if _, err := p.Refresh(ctx, "revoked"); !errors.Is(err, domain.ErrUnauthenticated) {
		t.Errorf("refresh with a dead token: got %v, want ErrUnauthenticated", err)
	}
	if err := p.Logout(ctx, "rt-alice"); err != nil {
		t.Errorf("Logout: %v", err)
	}
	end, err := url.Parse(p.EndSessionURL("id.tok.en"))
	if err != nil || end.Query().Get("id_token_hint") != "id.tok.en" || end.Query().Get("client_id") != testClient {
		t.Errorf("EndSessionURL: got %v, %v", end, err)
	}

	wrong := op.provider(t, func(c *Config) { c.ClientSecret = "wrong" })
	if _, err := wrong.PasswordGrant(ctx, "alice", "alice-pw"); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("wrong client secret: got %v, want ErrUnavailable (our configuration, not the user)", err)
	}
}

func TestAuthCodeURL(t *testing.T) {
	op := newFakeOP(t)
	p := op.provider(t, nil)
	raw, err := p.AuthCodeURL(ports.AuthRequest{State: "st", Nonce: "no", CodeVerifier: strings.Repeat("v", 43)})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(raw)
	q := u.Query()
	want := map[string]string{"response_type": "code", "client_id": testClient, "state": "st", "nonce": "no",
		"code_challenge_method": "S256", "scope": "openid profile email", "redirect_uri": "http://127.0.0.1:1/auth/callback"}
	for k, v := range want {
		if q.Get(k) != v {
			t.Errorf("%s: got %q, want %q", k, q.Get(k), v)
		}
	}
	if q.Get("code_challenge") == "" || q.Get("code_verifier") != "" {
		t.Errorf("PKCE: challenge %q, verifier leaked %q", q.Get("code_challenge"), q.Get("code_verifier"))
	}
}

func TestIDTokenChecks(t *testing.T) {
	op := newFakeOP(t)
	p := op.provider(t, nil)
	tests := []struct {
		name   string
		claims map[string]any
		nonce  string
		ok     bool
	}{
		{"valid with nonce", op.idClaims("n-1"), "n-1", true},
		{"nonce mismatch", op.idClaims("n-2"), "n-1", false},
		{"nonce missing", op.idClaims(""), "n-1", false},
		{"access token as id token", op.accessClaims(), "", false},
		{"several audiences, azp other", func() map[string]any {
			c := op.idClaims("")
			c["aud"], c["azp"] = []any{testClient, "x"}, "x"
			return c
		}(), "", false},
		{"other audience", func() map[string]any { c := op.idClaims(""); c["aud"] = "x"; return c }(), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.verify(context.Background(), op.sign(tt.claims, nil), kindID, tt.nonce)
			if (err == nil) != tt.ok {
				t.Errorf("verify: got %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// BenchmarkAuthenticate compares a Bearer token seen before (cache) with
// full local verification every time (no cache).
func BenchmarkAuthenticate(b *testing.B) {
	op := newFakeOP(b)
	p := op.provider(b, nil)
	token := bearer(op.sign(op.accessClaims(), nil))
	for _, mode := range []struct {
		name    string
		noCache bool
	}{{"cache", false}, {"nocache", true}} {
		b.Run(mode.name, func(b *testing.B) {
			a := NewAuthenticator(p)
			a.noCache = mode.noCache
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Authenticate(ctx, token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("cache-parallel", func(b *testing.B) {
		a := NewAuthenticator(p)
		ctx := context.Background()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := a.Authenticate(ctx, token); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// FuzzAuthenticateBearer: no string but a token the provider signed for our
// client is accepted, and nothing panics. Seeds are the forged tokens: alg
// none, bad signature, HMAC with the client secret, other issuer, other
// client, expired, id token.
func FuzzAuthenticateBearer(f *testing.F) {
	op := newFakeOP(f)
	p, err := New(Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: op.issuer, ClientID: testClient, ClientSecret: testSecret}, zap.NewNop())
	if err != nil {
		f.Fatal(err)
	}
	if err := p.Discover(context.Background()); err != nil {
		f.Fatal(err)
	}
	a := NewAuthenticator(p)
	a.noCache = true
	valid := op.sign(op.accessClaims(), nil)
	with := func(k string, v any) map[string]any { c := op.accessClaims(); c[k] = v; return c }
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, seed := range []string{
		valid,
		unsigned(op.accessClaims()),
		op.sign(op.accessClaims(), &signOpts{key: other}),
		op.sign(op.accessClaims(), &signOpts{key: []byte(testSecret + testSecret), alg: jose.HS256}),
		op.sign(with("iss", "http://127.0.0.1:1/realms/master"), nil),
		op.sign(with("azp", "other-app"), nil),
		op.sign(with("exp", time.Now().Add(-time.Hour).Unix()), nil),
		op.sign(op.idClaims(""), nil),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		_, err := a.Authenticate(context.Background(), bearer(token))
		if token == valid {
			if err != nil {
				t.Fatalf("the valid token was refused: %v", err)
			}
			return
		}
		if err == nil {
			t.Fatalf("accepted %q", token)
		}
		if !errors.Is(err, domain.ErrUnauthenticated) {
			t.Fatalf("token %q: got %v, want ErrUnauthenticated", token, err)
		}
	})
}

func TestNewRefusesMissingLimits(t *testing.T) {
	ok := Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize,
		Issuer: "https://kc.example/realms/agents", ClientID: testClient, ClientSecret: testSecret}
	tests := []struct {
		name   string
		edit   func(*Config)
		wantOK bool
	}{
		{"all set", func(*Config) {}, true},
		{"zero skew tolerates none", func(c *Config) { c.Skew = 0 }, true},
		{"negative skew", func(c *Config) { c.Skew = -time.Second }, false},
		{"zero HTTP timeout", func(c *Config) { c.HTTPTimeout = 0 }, false},
		{"zero key refetch interval", func(c *Config) { c.KeyRefetch = 0 }, false},
		{"zero cache size", func(c *Config) { c.CacheSize = 0 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			tt.edit(&cfg)
			_, err := New(cfg, zap.NewNop())
			if got := err == nil; got != tt.wantOK {
				t.Errorf("New: got %v, want ok=%v", err, tt.wantOK)
			}
			if err != nil && !errors.Is(err, domain.ErrInvalidInput) {
				t.Errorf("New: got %v, want %v", err, domain.ErrInvalidInput)
			}
		})
	}
}

// TestBearerPersonName: a Bearer token names the person by
// preferred_username, else name, else email, kept printable and bounded;
// the subject stays what identifies it.
func TestBearerPersonName(t *testing.T) {
	op := newFakeOP(t)
	a := NewAuthenticator(op.provider(t, nil))
	tests := []struct {
		name   string
		claims map[string]any
		want   string
	}{
		{"preferred_username first", map[string]any{"preferred_username": "alice", "name": "Alice Liddell", "email": "alice@example.com"}, "alice"},
		{"then name", map[string]any{"name": "Alice Liddell", "email": "alice@example.com"}, "Alice Liddell"},
		{"then email", map[string]any{"email": "alice@example.com"}, "alice@example.com"},
		{"none", map[string]any{}, ""},
		{"not a string", map[string]any{"preferred_username": 42, "name": "Alice"}, "Alice"},
		{"bidi override and controls left out", map[string]any{"preferred_username": "bob\u202e\x1b[0mtxt.exe"}, "bob[0mtxt.exe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := op.accessClaims()
			delete(c, "preferred_username")
			for k, v := range tt.claims {
				c[k] = v
			}
			p, err := a.Authenticate(t.Context(), bearer(op.sign(c, nil)))
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != tt.want || p.Subject != "user-alice" {
				t.Errorf("principal %q named %q, want user-alice named %q", p.Subject, p.Name, tt.want)
			}
		})
	}
}
