package keycloak

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// refusal is the reason code of err, "" when it has none.
func refusal(err error) string {
	var r *domain.TokenRefusal
	if errors.As(err, &r) {
		return r.Code
	}
	return ""
}

// TestGenericLogin: in generic mode a login verifies the id token (nonce,
// at_hash when present) and treats the access token as opaque; roles come
// from the id token, else userinfo, else a verifiable JWT access token.
func TestGenericLogin(t *testing.T) {
	for _, tc := range []struct {
		name       string
		setup      func(op *fakeOP)
		nonce      string
		wantRoles  []domain.Role
		wantSource string
		wantCode   string
	}{
		{name: "opaque access token, roles from userinfo", nonce: "n1", setup: func(op *fakeOP) {
			op.opaque, op.nonce = true, "n1"
			op.userinfo = map[string]any{"sub": "user-alice", "ext": map[string]any{"roles": []any{"lead"}}}
		}, wantRoles: []domain.Role{domain.RoleLead}, wantSource: domain.TokenUserinfo},
		{name: "JWT access token typ JWT without typ claim, roles from it", nonce: "n1", setup: func(op *fakeOP) {
			op.noTypClaim, op.nonce = true, "n1"
			op.extra = map[string]any{"ext": map[string]any{"roles": []any{"auditor"}}}
		}, wantRoles: []domain.Role{domain.RoleAuditor}, wantSource: domain.TokenID},
		{name: "access token not a verifiable JWT: default role", nonce: "n1", setup: func(op *fakeOP) {
			op.opaque, op.nonce = true, "n1"
		}, wantRoles: []domain.Role{domain.RoleUser}, wantSource: "default"},
		{name: "nonce mismatch", nonce: "n1", setup: func(op *fakeOP) { op.nonce = "other" }, wantCode: ReasonNonce},
		{name: "at_hash mismatch", nonce: "n1", setup: func(op *fakeOP) {
			op.opaque, op.nonce, op.atHash = true, "n1", atHashOf("another token")
		}, wantCode: ReasonATHash},
		{name: "at_hash matching", nonce: "n1", setup: func(op *fakeOP) {
			op.opaque, op.nonce, op.atHash = true, "n1", atHashOf(opaqueToken)
		}, wantRoles: []domain.Role{domain.RoleUser}, wantSource: "default"},
		{name: "userinfo of another subject", nonce: "n1", setup: func(op *fakeOP) {
			op.opaque, op.nonce = true, "n1"
			op.userinfo = map[string]any{"sub": "user-mallory", "ext": map[string]any{"roles": []any{"admin"}}}
		}, wantCode: ReasonSubject},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := newFakeOPAt(t, "/oauth2/default")
			op.roles = nil
			tc.setup(op)
			p := op.provider(t, func(c *Config) { c.Generic, c.RolesClaim = true, "ext.roles" })
			ts, err := p.ExchangeCode(t.Context(), "code-alice", ports.AuthRequest{Nonce: tc.nonce, CodeVerifier: "v"})
			if tc.wantCode != "" {
				if !errors.Is(err, domain.ErrUnauthenticated) || refusal(err) != tc.wantCode {
					t.Fatalf("got %v (code %q), want ErrUnauthenticated with code %q", err, refusal(err), tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("ExchangeCode: %v", err)
			}
			if !slices.Equal(ts.Roles.Roles, tc.wantRoles) || ts.Roles.Source != tc.wantSource || ts.Subject != "user-alice" {
				t.Errorf("got %v from %q for %q, want %v from %q for user-alice", ts.Roles.Roles, ts.Roles.Source, ts.Subject, tc.wantRoles, tc.wantSource)
			}
			if ts.AccessExpiry.IsZero() {
				t.Error("AccessExpiry is zero, want the token response's expires_in")
			}
		})
	}
}

// TestKeycloakLoginStillVerifiesTheAccessToken: Keycloak mode keeps the
// specification's rule, both tokens verified.
func TestKeycloakLoginStillVerifiesTheAccessToken(t *testing.T) {
	op := newFakeOP(t)
	op.opaque = true
	p := op.provider(t, nil)
	if _, err := p.PasswordGrant(t.Context(), "alice", "alice-pw"); !errors.Is(err, domain.ErrUnauthenticated) {
		t.Errorf("opaque access token in Keycloak mode: got %v, want ErrUnauthenticated", err)
	}
}

// TestKeycloakLoginChecksATHash: the id token's at_hash, when present, must
// match the access token in Keycloak mode too (one verification path).
func TestKeycloakLoginChecksATHash(t *testing.T) {
	op := newFakeOP(t)
	op.atHash = atHashOf("another token")
	p := op.provider(t, nil)
	_, err := p.PasswordGrant(t.Context(), "alice", "alice-pw")
	if !errors.Is(err, domain.ErrUnauthenticated) || refusal(err) != ReasonATHash {
		t.Errorf("at_hash of another token: got %v (code %q), want ErrUnauthenticated with code %q", err, refusal(err), ReasonATHash)
	}
}

// TestGenericBearer: Bearer JWTs with header typ at+jwt, JWT or none that
// name the client in aud, azp or client_id (or the configured audience);
// id tokens refused by the documented rule; each refusal with its code.
func TestGenericBearer(t *testing.T) {
	op := newFakeOPAt(t, "/oauth2/default")
	at := func(typ string, mut func(map[string]any)) string {
		c := op.accessClaims()
		delete(c, "typ")
		if mut != nil {
			mut(c)
		}
		return op.sign(c, &signOpts{typ: typ})
	}
	id := op.sign(op.idClaims(""), nil)
	for _, tc := range []struct {
		name     string
		token    string
		audience string
		wantCode string
	}{
		{name: "header JWT, azp", token: at("JWT", nil)},
		{name: "header at+jwt", token: at("at+jwt", nil)},
		{name: "no header typ", token: at("", nil)},
		{name: "RFC 9068 client_id", token: at("at+jwt", func(c map[string]any) { delete(c, "azp"); c["client_id"] = testClient })},
		{name: "configured audience", audience: "https://api.agents", token: at("JWT", func(c map[string]any) { delete(c, "azp"); c["aud"] = "https://api.agents" })},
		{name: "another audience", token: at("JWT", func(c map[string]any) { delete(c, "azp"); c["aud"] = "https://api.agents" }), wantCode: ReasonAudience},
		{name: "id token (typ claim ID)", token: id, wantCode: ReasonIDTokenAsBearer},
		{name: "id token (nonce, no typ claim)", token: at("JWT", func(c map[string]any) { c["nonce"] = "n"; c["aud"] = testClient }), wantCode: ReasonIDTokenAsBearer},
		{name: "id token (at_hash)", token: at("JWT", func(c map[string]any) { c["at_hash"] = "x" }), wantCode: ReasonIDTokenAsBearer},
		{name: "another header typ", token: at("logout+jwt", nil), wantCode: ReasonType},
		{name: "expired", token: at("JWT", func(c map[string]any) { c["exp"] = op.now.Add(-2 * time.Minute).Unix() }), wantCode: ReasonExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := op.provider(t, func(c *Config) { c.Generic, c.Audience = true, tc.audience })
			got, err := NewAuthenticator(p).Authenticate(t.Context(), bearer(tc.token))
			if tc.wantCode != "" {
				if !errors.Is(err, domain.ErrUnauthenticated) || refusal(err) != tc.wantCode {
					t.Fatalf("got %v (code %q), want code %q", err, refusal(err), tc.wantCode)
				}
				return
			}
			if err != nil || got.Subject != "user-alice" {
				t.Fatalf("got %+v, %v; want user-alice", got, err)
			}
		})
	}
}

// TestOpaqueBearerIntrospection: an opaque Bearer token is asked of the
// introspection endpoint once, however many requests carry it at once.
func TestOpaqueBearerIntrospection(t *testing.T) {
	op := newFakeOPAt(t, "/oauth2/default")
	op.roles = []any{"lead"}
	p := op.provider(t, func(c *Config) { c.Generic, c.RolesClaim = true, "realm_access.roles" })
	a := NewAuthenticator(p)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			got, err := a.Authenticate(t.Context(), bearer(opaqueToken))
			if err == nil && (!slices.Equal(got.Roles, []domain.Role{domain.RoleLead}) || got.Subject != "user-alice") {
				err = errors.New("wrong principal")
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(t.Context(), bearer(opaqueToken)); err != nil {
		t.Fatal(err)
	}
	if got := op.introspectHits.Load(); got != 1 {
		t.Errorf("introspection calls: got %d, want 1", got)
	}
	op.inactive = true
	_, err := a.Authenticate(t.Context(), bearer("another-opaque-token"))
	if refusal(err) != ReasonInactive {
		t.Errorf("inactive token: got %v, want code %q", err, ReasonInactive)
	}
	kc := newFakeOP(t)
	_, err = NewAuthenticator(kc.provider(t, nil)).Authenticate(t.Context(), bearer(opaqueToken))
	if refusal(err) != ReasonMalformed {
		t.Errorf("opaque token in Keycloak mode: got %v, want code %q", err, ReasonMalformed)
	}
}

// TestIssuerWithTrailingSlash: the issuer is exactly what the discovery
// document says, a trailing "/" included (Auth0, zitadel's example OP),
// and the internal discovery URL still moves the endpoints below it.
func TestIssuerWithTrailingSlash(t *testing.T) {
	op := newFakeOPAt(t, "/tenant/")
	op.grants = []string{"authorization_code", "password"}
	p := op.provider(t, func(c *Config) { c.Generic = true })
	if _, err := NewAuthenticator(p).Authenticate(t.Context(), bearer(op.sign(op.accessClaims(), nil))); err != nil {
		t.Errorf("Bearer of issuer %s: %v", op.issuer, err)
	}
	if _, err := p.PasswordGrant(t.Context(), "alice", "alice-pw"); err != nil {
		t.Errorf("password grant: %v", err)
	}
	cfg := Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: "https://idp.example.com/", DiscoveryURL: "http://idp.internal:8080/"}
	for _, tc := range []struct{ in, want string }{
		{"https://idp.example.com/oauth/token", "http://idp.internal:8080/oauth/token"},
		{"https://other.example.com/keys", "https://other.example.com/keys"},
	} {
		if got := cfg.internal(tc.in); got != tc.want {
			t.Errorf("internal(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, issuer := range []string{strings.TrimSuffix(op.issuer, "/"), op.issuer + "/"} {
		q, err := New(Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: issuer, Generic: true, ClientID: testClient, ClientSecret: testSecret}, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		var mismatch *IssuerMismatchError
		if err := q.Discover(t.Context()); !errors.As(err, &mismatch) {
			t.Errorf("issuer %q against the document's %q: got %v, want IssuerMismatchError", issuer, op.issuer, err)
		}
	}
}

// TestScopes: the code flow asks for auth.oidc.scopes; by default
// Keycloak's openid profile email, and for a generic provider the same
// plus offline_access where the provider lists it (else no refresh token
// comes, and the session ends with its access token).
func TestScopes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		generic    bool
		supported  []string
		configured []string
		want       string
	}{
		{"Keycloak default", false, []string{"openid", "offline_access"}, nil, "openid profile email"},
		{"generic, offline_access listed", true, []string{"openid", "profile", "email", "offline_access"}, nil, "openid profile email offline_access"},
		{"generic, not listed", true, []string{"openid", "profile"}, nil, "openid profile email"},
		{"configured", true, []string{"offline_access"}, []string{"openid", "groups"}, "openid groups"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := newFakeOPAt(t, "/realms/agents")
			op.scopes = tc.supported
			p := op.provider(t, func(c *Config) { c.Generic, c.Scopes = tc.generic, tc.configured })
			raw, err := p.AuthCodeURL(ports.AuthRequest{State: "s", Nonce: "n", CodeVerifier: strings.Repeat("v", 43)})
			if err != nil {
				t.Fatal(err)
			}
			u, _ := url.Parse(raw)
			if got := u.Query().Get("scope"); got != tc.want {
				t.Errorf("scope = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRefreshWithoutRefreshToken: nothing to redeem is the session's end
// (ErrUnauthenticated), not a provider failure.
func TestRefreshWithoutRefreshToken(t *testing.T) {
	for _, generic := range []bool{false, true} {
		op := newFakeOP(t)
		p := op.provider(t, func(c *Config) { c.Generic = generic })
		if _, err := p.Refresh(t.Context(), ""); !errors.Is(err, domain.ErrUnauthenticated) || op.tokenHits.Load() != 0 {
			t.Errorf("generic %v: got %v after %d calls, want ErrUnauthenticated and no call", generic, err, op.tokenHits.Load())
		}
	}
}

// TestSubjectClaim: auth.oidc.subjectClaim names the claim the principal's
// subject is read from (preferred_username where the operator chooses
// it); a token without it is refused.
func TestSubjectClaim(t *testing.T) {
	for _, generic := range []bool{false, true} {
		op := newFakeOP(t)
		op.grants = []string{"password", "authorization_code"}
		p := op.provider(t, func(c *Config) { c.Generic, c.SubjectClaim = generic, "preferred_username" })
		ts, err := p.PasswordGrant(t.Context(), "alice", "alice-pw")
		if err != nil || ts.Subject != "alice" {
			t.Errorf("generic %v: login subject %q, %v; want alice", generic, ts.Subject, err)
		}
		got, err := NewAuthenticator(p).Authenticate(t.Context(), bearer(op.sign(op.accessClaims(), nil)))
		if err != nil || got.Subject != "alice" {
			t.Errorf("generic %v: Bearer subject %q, %v; want alice", generic, got.Subject, err)
		}
		c := op.accessClaims()
		delete(c, "preferred_username")
		if _, err := NewAuthenticator(p).Authenticate(t.Context(), bearer(op.sign(c, nil))); refusal(err) != ReasonNoSubject {
			t.Errorf("generic %v: token without preferred_username: %v, want %s", generic, err, ReasonNoSubject)
		}
	}
}

// TestIntrospectionURL: a provider that does not advertise its
// introspection endpoint (Ory Hydra keeps it on its admin API) can be
// given one (auth.oidc.introspectionUrl); without it an opaque Bearer
// token is refused with oidc_token_opaque.
func TestIntrospectionURL(t *testing.T) {
	op := newFakeOPAt(t, "/oauth2/default")
	op.noIntrospection = true
	p := op.provider(t, func(c *Config) { c.Generic = true })
	if _, err := NewAuthenticator(p).Authenticate(t.Context(), bearer(opaqueToken)); refusal(err) != ReasonOpaque {
		t.Errorf("not advertised: got %v, want %s", err, ReasonOpaque)
	}
	p = op.provider(t, func(c *Config) {
		c.Generic, c.IntrospectionURL = true, op.issuer+"/protocol/openid-connect/token/introspect"
	})
	if got, err := NewAuthenticator(p).Authenticate(t.Context(), bearer(opaqueToken)); err != nil || got.Subject != "user-alice" || got.Name != "alice" {
		t.Errorf("configured: got %+v, %v; want user-alice named alice (the introspection answer's preferred_username)", got, err)
	}
}
