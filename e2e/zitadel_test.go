//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/internal/testwait"
)

// zitadelOP is a running e2e/peers/zitadelop: zitadel/oidc's example OP,
// issuer http://localhost:<port>/ (with its trailing slash), clients
// "web" (opaque access tokens) and "jwt" (JWT access tokens), secret
// "secret", no password grant; alice has role admin in ext.roles, bob
// none.
type zitadelOP struct {
	issuer string
	proc   *proc
}

// startZitadel runs the peer with access tokens living ttl ("" for the
// example's 5m) that accepts the redirect URIs of services on ports.
func startZitadel(t *testing.T, ttl string, ports ...int) *zitadelOP {
	t.Helper()
	bin := zitadelPeer.binary(t)
	users := map[string]map[string]any{
		"alice-id": {"ID": "alice-id", "Username": "alice", "Password": "alice-pw", "FirstName": "Alice", "LastName": "A", "Email": "alice@example.com", "EmailVerified": true, "PreferredLanguage": "en"},
		"bob-id":   {"ID": "bob-id", "Username": "bob", "Password": "bob-pw", "FirstName": "Bob", "LastName": "B", "Email": "bob@example.com", "EmailVerified": true, "PreferredLanguage": "en"},
	}
	b, _ := json.Marshal(users)
	usersFile := filepath.Join(t.TempDir(), "users.json")
	if err := os.WriteFile(usersFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var redirects []string
	for _, p := range ports {
		redirects = append(redirects, fmt.Sprintf("http://127.0.0.1:%d/auth/callback", p))
	}
	port := freePort(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PORT="+fmt.Sprint(port), "USERS_FILE="+usersFile, "REDIRECT_URI="+strings.Join(redirects, ","),
		`ROLES={"alice-id":["admin"]}`)
	if ttl != "" {
		cmd.Env = append(cmd.Env, "ACCESS_TTL="+ttl)
	}
	op := &zitadelOP{issuer: fmt.Sprintf("http://localhost:%d/", port), proc: startProc(t, cmd, "zitadelop")}
	op.proc.waitLine(t, hung, "listening")
	return op
}

// zitadelService runs agentauth in generic mode against op as client on
// port, roles from ext.roles.
func zitadelService(t *testing.T, op *zitadelOP, client string, port int, env ...string) *service {
	t.Helper()
	s := startService(t, &idp{issuer: op.issuer, servicePort: port}, port, append([]string{
		"SERVICE_OIDC_PROVIDER=generic",
		"SERVICE_OIDC_CLIENT_ID=" + client,
		"SERVICE_OIDC_CLIENT_SECRET=secret",
		"SERVICE_OIDC_ROLES_CLAIM=ext.roles",
	}, env...)...)
	s.waitReady(t)
	return s
}

// codeFlow signs user in at op for client without a browser (the
// example's login page is a plain form) and redeems the code: the tokens
// a client of the provider would hold, for Bearer requests.
func (op *zitadelOP) codeFlow(t *testing.T, client string, port int, user, password string) *oauth2.Token {
	t.Helper()
	conf := oauth2.Config{ClientID: client, ClientSecret: "secret", Scopes: []string{"openid", "profile"},
		Endpoint:    oauth2.Endpoint{AuthURL: op.issuer + "auth", TokenURL: op.issuer + "oauth/token", AuthStyle: oauth2.AuthStyleInHeader},
		RedirectURL: fmt.Sprintf("http://127.0.0.1:%d/auth/callback", port)}
	verifier := oauth2.GenerateVerifier()
	c := noRedirects(newJar(t))
	next := conf.AuthCodeURL("state-1", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("nonce", "nonce-1"))
	var code string
	for i := 0; i < 6 && code == ""; i++ {
		var resp *http.Response
		var err error
		if strings.Contains(next, "/login/username") {
			u, _ := url.Parse(next)
			resp, err = c.PostForm(op.issuer+"login/username", url.Values{"id": {u.Query().Get("authRequestID")}, "username": {user}, "password": {password}})
		} else {
			resp, err = c.Get(next)
		}
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := resp.Location()
		if err != nil {
			t.Fatalf("code flow at %s: %d without a redirect", next, resp.StatusCode)
		}
		if strings.HasPrefix(loc.String(), conf.RedirectURL) {
			code = loc.Query().Get("code")
		}
		next = loc.String()
	}
	if code == "" {
		t.Fatalf("code flow for %s/%s ended at %s without a code", client, user, next)
	}
	tok, err := conf.Exchange(context.Background(), code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("code exchange: %v", err)
	}
	return tok
}

// TestZitadel runs agentauth against zitadel/oidc's example OpenID
// provider: browser logins (code flow, PKCE, nonce, at_hash) with roles
// from userinfo (opaque access tokens) and from the id token (JWT access
// tokens), a user without roles, Bearer JWT and opaque (introspected)
// tokens, an id token refused as a Bearer token, logout, the issuer's
// trailing slash, and password login refused cleanly by a provider
// without the password grant.
func TestZitadel(t *testing.T) {
	webPort, jwtPort := freePort(t), freePort(t)
	op := startZitadel(t, "", webPort, jwtPort)
	web := zitadelService(t, op, "web", webPort)
	jwt := zitadelService(t, op, "jwt", jwtPort)
	t.Logf("provider: zitadel/oidc %s example OP at %s", zitadelPeer.version, op.issuer)

	t.Run("browser login, roles from userinfo (opaque access token)", func(t *testing.T) {
		got := browserLogin(t, web, "alice", "alice-pw").Me
		if !slices.Equal(got.Roles, []string{"ADMIN"}) || got.Method != "oidc" || got.Subject != "alice-id" || got.RoleSource != "userinfo" {
			t.Errorf("got %+v, want alice-id ADMIN by oidc from userinfo", got)
		}
	})
	t.Run("browser login without roles is USER", func(t *testing.T) {
		if got := browserLogin(t, web, "bob", "bob-pw").Me; !slices.Equal(got.Roles, []string{"USER"}) || got.Subject != "bob-id" {
			t.Errorf("got %+v, want bob-id USER", got)
		}
	})
	t.Run("browser login, roles from the id token (JWT access token)", func(t *testing.T) {
		if got := browserLogin(t, jwt, "alice", "alice-pw").Me; !slices.Equal(got.Roles, []string{"ADMIN"}) || got.RoleSource != "id_token" {
			t.Errorf("got %+v, want ADMIN from the id token", got)
		}
	})
	t.Run("Bearer opaque token, introspected", func(t *testing.T) {
		for _, tc := range []struct{ user, password, want string }{{"alice", "alice-pw", "ADMIN"}, {"bob", "bob-pw", "USER"}} {
			tok := op.codeFlow(t, "web", webPort, tc.user, tc.password)
			if strings.Count(tok.AccessToken, ".") == 2 {
				t.Fatalf("client web got a JWT access token; want an opaque one")
			}
			for range 2 { // the second is answered from the cache
				if st, m := whoami(t, noRedirects(nil), web, tok.AccessToken); st != http.StatusOK || !slices.Equal(m.Roles, []string{tc.want}) {
					t.Errorf("%s: %d %+v, want %s", tc.user, st, m, tc.want)
				}
			}
		}
		if st, body := get(t, noRedirects(nil), web.url+"/api/v2/me", "not-a-token-the-provider-issued"); st != http.StatusUnauthorized || !strings.Contains(body, "oidc_token_inactive") {
			t.Errorf("unknown opaque token: %d %s, want 401 oidc_token_inactive", st, body)
		}
	})
	t.Run("Bearer JWT access token; id token refused", func(t *testing.T) {
		tok := op.codeFlow(t, "jwt", jwtPort, "alice", "alice-pw")
		if st, m := whoami(t, noRedirects(nil), jwt, tok.AccessToken); st != http.StatusOK || !slices.Equal(m.Roles, []string{"ADMIN"}) {
			t.Errorf("JWT access token: %d %+v, want ADMIN", st, m)
		}
		id, _ := tok.Extra("id_token").(string)
		if st, body := get(t, noRedirects(nil), jwt.url+"/api/v2/me", id); st != http.StatusUnauthorized || !strings.Contains(body, "oidc_id_token_as_bearer") {
			t.Errorf("id token as Bearer: %d %s, want 401 oidc_id_token_as_bearer", st, body)
		}
		// The process log is buffered (written at least every second).
		jwt.proc.waitLine(t, time.Minute, `"reason":"oidc_id_token_as_bearer"`)
		if st, _ := get(t, noRedirects(nil), web.url+"/api/v2/me", tok.AccessToken); st != http.StatusUnauthorized {
			t.Errorf("client jwt's access token at the service of client web: %d, want 401", st)
		}
	})
	t.Run("logout", func(t *testing.T) {
		cookie := browserLogin(t, web, "alice", "alice-pw").Cookie
		req, _ := http.NewRequest(http.MethodPost, web.url+"/auth/logout", nil)
		req.AddCookie(&http.Cookie{Name: "user_session", Value: cookie})
		st, body := do(t, noRedirects(nil), req)
		if st != http.StatusOK || !strings.Contains(body, op.issuer+"end_session") {
			t.Errorf("logout: %d %s, want 200 with the provider's end_session URL", st, body)
		}
		if st, _ := withCookie(t, web, cookie); st != http.StatusUnauthorized {
			t.Errorf("cookie after logout: %d, want 401", st)
		}
	})
	t.Run("oidc check", func(t *testing.T) {
		alice := op.codeFlow(t, "web", webPort, "alice", "alice-pw")
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "SERVICE_OIDC_PROVIDER=generic", "SERVICE_OIDC_ISSUER=" + op.issuer,
			"SERVICE_OIDC_CLIENT_ID=web", "SERVICE_OIDC_CLIENT_SECRET=secret", "SERVICE_OIDC_ROLES_CLAIM=ext.roles",
			fmt.Sprintf("SERVICE_OIDC_REDIRECT_URI=http://127.0.0.1:%d/auth/callback", webPort)}
		for _, tc := range []struct {
			name  string
			args  []string
			stdin string
			want  []string
		}{
			{"provider facts", nil, "", []string{
				"ok    client credentials: the provider accepts client \"web\"",
				"info  password grant: not offered", "auth.oidc.passwordLogin",
				"info  introspection: " + op.issuer + "oauth/introspect",
				"info  end session: " + op.issuer + "end_session",
				"info  userinfo: " + op.issuer + "userinfo",
				"info  scopes asked at login: openid profile email offline_access",
			}},
			{"a user without the password grant", []string{"--username", "alice"}, "alice-pw\n", []string{"the provider does not offer the password grant", "--token"}},
			{"an opaque token", []string{"--token"}, alice.AccessToken + "\n", []string{
				"roles claim   ext.roles (auth.oidc.rolesClaim)",
				`kept     ext.roles                    "admin" -> ADMIN`,
				"role granted: ADMIN (from introspection)",
			}},
			{"an id token as a token", []string{"--token"}, alice.Extra("id_token").(string) + "\n", []string{"FAIL  token", "oidc_id_token_as_bearer"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cmd := exec.Command(binary, append([]string{"oidc", "check"}, tc.args...)...)
				cmd.Env, cmd.Stdin = env, strings.NewReader(tc.stdin)
				out, _ := cmd.CombinedOutput()
				for _, w := range tc.want {
					if !strings.Contains(string(out), w) {
						t.Errorf("output lacks %q:\n%s", w, out)
					}
				}
			})
		}
	})
	t.Run("password login refused cleanly without the password grant", func(t *testing.T) {
		st, _, body := passwordLogin(t, web, "alice", "alice-pw")
		if st != http.StatusNotFound || !strings.Contains(body, "auth.oidc.passwordLogin") {
			t.Errorf("POST /auth/login: %d %s, want 404 naming auth.oidc.passwordLogin", st, body)
		}
		if st, body := get(t, noRedirects(nil), web.mgmt+"/health/ready", ""); st != http.StatusOK {
			t.Errorf("/health/ready after it: %d %s, want 200", st, body)
		}
	})
}

// TestZitadelExpiry: with access tokens living 5 s, a session without a
// refresh token (scopes without offline_access) ends with a 401, never a
// 503, while one with a refresh token (the generic default asks for
// offline_access, which the provider lists) is renewed.
func TestZitadelExpiry(t *testing.T) {
	const ttl = 5 * time.Second
	shortPort, renewPort := freePort(t), freePort(t)
	op := startZitadel(t, ttl.String(), shortPort, renewPort)
	short := zitadelService(t, op, "web", shortPort, "SERVICE_OIDC_SCOPES=openid,profile,email", "SERVICE_OIDC_REFRESH_BEFORE=1s")
	renew := zitadelService(t, op, "web", renewPort, "SERVICE_OIDC_REFRESH_BEFORE=1s")

	for _, tc := range []struct {
		name     string
		s        *service
		wantLast int
	}{
		{"no refresh token: the session ends", short, http.StatusUnauthorized},
		{"refresh token: the session is renewed", renew, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bs := browserLogin(t, tc.s, "alice", "alice-pw")
			if !slices.Equal(bs.Me.Roles, []string{"ADMIN"}) {
				t.Fatalf("login: %+v", bs.Me)
			}
			// Real processes, so the clocks run: the session without a
			// refresh token ends once its access token has expired, and the
			// other is renewed at the provider (which says so) and lives on.
			// Either way the cookie answers only 200 or 401.
			cookie := func() int {
				st, body := withCookie(t, tc.s, bs.Cookie)
				if st != http.StatusOK && st != http.StatusUnauthorized {
					t.Fatalf("status %d %s; want only 200 or 401", st, body)
				}
				return st
			}
			if tc.wantLast == http.StatusUnauthorized {
				testwait.Until(t, 6*ttl, "the session ends with its access token", func() (bool, string) {
					st := cookie()
					return st == http.StatusUnauthorized, fmt.Sprint(st)
				})
			} else {
				testwait.Until(t, 6*ttl, "the session renewed at the provider", func() (bool, string) {
					if st := cookie(); st != http.StatusOK {
						t.Fatalf("the renewable session answered %d before it was renewed", st)
					}
					return op.proc.saw("refresh token redeemed"), "no refresh yet"
				})
			}
			last := tc.wantLast
			if st := cookie(); st != last {
				t.Errorf("then %d, want %d still (an ended session never comes back, a renewed one lives on)", st, last)
			}
			if last == http.StatusUnauthorized { // a browser is sent to sign in again
				req, _ := http.NewRequest(http.MethodGet, tc.s.url+"/api/v2/me", nil)
				req.AddCookie(&http.Cookie{Name: "user_session", Value: bs.Cookie})
				req.Header.Set("Accept", "text/html")
				if st, body := do(t, noRedirects(nil), req); st != http.StatusUnauthorized || !strings.Contains(body, `href="/auth/login?return_to=%2Fapi%2Fv2%2Fme"`) {
					t.Errorf("a browser after the end: %d, want 401 with the sign-in link:\n%s", st, body)
				}
			}
		})
	}
}
