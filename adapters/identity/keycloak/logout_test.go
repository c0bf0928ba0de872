package keycloak

import (
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentauth/agentauth/domain"
)

// logoutClaims is a logout token as Keycloak sends it to the client's
// back-channel logout URL.
func (op *fakeOP) logoutClaims() map[string]any {
	return map[string]any{
		"iss": op.issuer, "aud": testClient, "sub": "user-alice", "sid": "kc-session-1", "typ": "Logout",
		"iat": op.now.Unix(), "exp": op.now.Add(5 * time.Minute).Unix(), "jti": "d2c1a0f4-logout",
		"events": map[string]any{backchannelLogoutEvent: map[string]any{}, "revoke_offline_access": true},
	}
}

func TestVerifyLogoutToken(t *testing.T) {
	op := newFakeOP(t)
	p := op.provider(t, func(c *Config) { c.Skew = 5 * time.Second })
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	with := func(mut func(map[string]any)) string {
		c := op.logoutClaims()
		mut(c)
		return op.sign(c, nil)
	}
	for _, tc := range []struct {
		name    string
		token   string
		wantErr string // "" means accepted
	}{
		{"a Keycloak logout token", op.sign(op.logoutClaims(), nil), ""},
		{"sub only (no sid)", with(func(c map[string]any) { delete(c, "sid") }), ""},
		{"sid only (no sub)", with(func(c map[string]any) { delete(c, "sub") }), ""},
		{"no typ claim (oidc-provider)", with(func(c map[string]any) { delete(c, "typ") }), ""},
		{"no exp (optional)", with(func(c map[string]any) { delete(c, "exp") }), ""},
		{"an id token", op.sign(op.idClaims("n-1"), nil), "typ"},
		{"an id token without typ", with(func(c map[string]any) { delete(c, "typ"); delete(c, "events"); c["nonce"] = "n" }), "events"},
		{"a nonce", with(func(c map[string]any) { c["nonce"] = "n-1" }), "nonce"},
		{"no events", with(func(c map[string]any) { delete(c, "events") }), "events"},
		{"events without the logout event", with(func(c map[string]any) {
			c["events"] = map[string]any{"http://schemas.openid.net/event/other": map[string]any{}}
		}), "events"},
		{"the event is not an object", with(func(c map[string]any) { c["events"] = map[string]any{backchannelLogoutEvent: "yes"} }), "events"},
		{"another audience", with(func(c map[string]any) { c["aud"] = "other-app" }), "audience"},
		{"another issuer", with(func(c map[string]any) { c["iss"] = "https://evil.example/realms/agents" }), "different provider"},
		{"neither sid nor sub", with(func(c map[string]any) { delete(c, "sid"); delete(c, "sub") }), "neither sid nor sub"},
		{"no jti", with(func(c map[string]any) { delete(c, "jti") }), "jti"},
		{"no iat", with(func(c map[string]any) { delete(c, "iat") }), "iat"},
		{"iat too old", with(func(c map[string]any) { c["iat"] = op.now.Add(-LogoutTokenMaxAge - time.Minute).Unix() }), "ago"},
		{"iat in the future", with(func(c map[string]any) { c["iat"] = op.now.Add(time.Minute).Unix() }), "future"},
		{"expired", with(func(c map[string]any) { c["exp"] = op.now.Add(-time.Minute).Unix() }), "exp"},
		{"signed by a key not the provider's", op.sign(op.logoutClaims(), &signOpts{key: other}), "verify"},
		{"HS256 with the client secret", op.sign(op.logoutClaims(), &signOpts{key: []byte(testSecret + testSecret), alg: jose.HS256}), "algorithm"},
		{"alg none", unsigned(op.logoutClaims()), "algorithm"},
		{"not a JWT", "logout", "not a signed JWT"},
		{"empty", "", "empty"},
		{"huge", strings.Repeat("a", maxLogoutToken+1), "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lt, err := p.VerifyLogoutToken(t.Context(), tc.token)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if lt.ID != "d2c1a0f4-logout" || (lt.SessionID == "" && lt.Subject == "") {
					t.Errorf("got %+v", lt)
				}
				if want := time.Unix(op.now.Unix(), 0).Add(LogoutTokenMaxAge + 5*time.Second); !lt.AcceptedUntil.Equal(want) {
					t.Errorf("AcceptedUntil %v, want %v (iat + max age + skew)", lt.AcceptedUntil, want)
				}
				return
			}
			if !errors.Is(err, domain.ErrInvalidInput) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got %v, want ErrInvalidInput mentioning %q", err, tc.wantErr)
			}
		})
	}
	t.Run("an access token with the at+jwt header", func(t *testing.T) {
		c := op.logoutClaims()
		delete(c, "typ")
		if _, err := p.VerifyLogoutToken(t.Context(), op.sign(c, &signOpts{typ: "at+jwt"})); !errors.Is(err, domain.ErrInvalidInput) {
			t.Errorf("got %v, want ErrInvalidInput", err)
		}
	})
	t.Run("before discovery: unavailable, not a 400", func(t *testing.T) {
		undiscovered, err := New(Config{Skew: testSkew, HTTPTimeout: testTimeout, KeyRefetch: testRefetch, CacheSize: testCacheSize, Issuer: op.issuer, ClientID: testClient, ClientSecret: testSecret}, p.log)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := undiscovered.VerifyLogoutToken(t.Context(), op.sign(op.logoutClaims(), nil)); !errors.Is(err, domain.ErrUnavailable) {
			t.Errorf("got %v, want ErrUnavailable", err)
		}
	})
}
