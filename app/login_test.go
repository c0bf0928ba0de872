package app_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
)

type loginFixture struct {
	idp      *mocks.MockIdentityProvider
	sessions *mocks.MockLoginSessionStore
	requests *mocks.MockAuthRequestStore
	throttle *mocks.MockLoginThrottle
	clock    *mocks.MockClock
	now      time.Time
	login    *app.Login
}

var loginCfg = app.LoginConfig{
	PasswordLogin: true, SessionIdle: time.Hour, SessionMax: 8 * time.Hour,
	RefreshBefore: time.Minute, LoginFailures: 3, LoginWindow: 15 * time.Minute,
}

func newLoginFixture(t *testing.T, cfg app.LoginConfig) *loginFixture {
	c := gomock.NewController(t)
	f := &loginFixture{
		idp: mocks.NewMockIdentityProvider(c), sessions: mocks.NewMockLoginSessionStore(c),
		requests: mocks.NewMockAuthRequestStore(c), throttle: mocks.NewMockLoginThrottle(c),
		clock: mocks.NewMockClock(c), now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
	}
	f.clock.EXPECT().Now().DoAndReturn(func() time.Time { return f.now }).AnyTimes()
	login, err := app.NewLogin(cfg, f.idp, f.sessions, f.requests, f.throttle, f.clock)
	if err != nil {
		t.Fatal(err)
	}
	f.login = login
	return f
}

func tokenSet(now time.Time, roles ...domain.Role) ports.TokenSet {
	return ports.TokenSet{
		Subject: "sub-1", Username: "alice",
		Roles:       domain.RoleExtraction{Roles: roles, Source: domain.TokenID},
		AccessToken: "at", RefreshToken: "rt", IDToken: "it",
		AccessExpiry: now.Add(5 * time.Minute), RefreshExpiry: now.Add(30 * time.Minute),
	}
}

const goodCookie = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ" // 43 base64url characters

func TestBeginStoresStateAndReturnsProviderURL(t *testing.T) {
	f := newLoginFixture(t, loginCfg)
	var sent ports.AuthRequest
	f.idp.EXPECT().Ready().Return(nil)
	f.idp.EXPECT().AuthCodeURL(gomock.Any()).DoAndReturn(func(r ports.AuthRequest) (string, error) {
		sent = r
		return "https://kc/auth?state=" + r.State, nil
	})
	f.requests.EXPECT().PutAuthRequest(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, p ports.PendingAuthRequest) error {
		if p.StateHash != app.Digest(sent.State) || p.Request.State != "" || p.Request.Nonce != sent.Nonce || p.Request.CodeVerifier != sent.CodeVerifier {
			t.Errorf("stored %+v: want the state's digest only, and the same nonce and verifier", p)
		}
		if p.ReturnTo != "/sessions?x=1" || !p.ExpiresAt.After(f.now) {
			t.Errorf("stored ReturnTo %q ExpiresAt %v", p.ReturnTo, p.ExpiresAt)
		}
		return nil
	})
	got, err := f.login.Begin(t.Context(), "/sessions?x=1")
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if got != "https://kc/auth?state="+sent.State || len(sent.State) != 43 || len(sent.CodeVerifier) != 43 || sent.Nonce == sent.State {
		t.Errorf("Begin: got %q with request %+v", got, sent)
	}
}

func TestBeginRefuses(t *testing.T) {
	tests := []struct {
		name     string
		returnTo string
		ready    error
		want     error
	}{
		{"provider not ready", "/", fmt.Errorf("x: %w", domain.ErrUnavailable), domain.ErrUnavailable},
		{"absolute URL", "https://evil.example/", nil, domain.ErrInvalidInput},
		{"scheme-relative", "//evil.example/", nil, domain.ErrInvalidInput},
		{"backslash", "/\\evil.example", nil, domain.ErrInvalidInput},
		{"control character", "/a\nb", nil, domain.ErrInvalidInput},
		{"relative without slash", "sessions", nil, domain.ErrInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newLoginFixture(t, loginCfg)
			f.idp.EXPECT().Ready().Return(tt.ready)
			if _, err := f.login.Begin(t.Context(), tt.returnTo); !errors.Is(err, tt.want) {
				t.Errorf("Begin(%q): got %v, want %v", tt.returnTo, err, tt.want)
			}
		})
	}
}

func TestCallback(t *testing.T) {
	pending := ports.PendingAuthRequest{Request: ports.AuthRequest{Nonce: "n", CodeVerifier: "v"}, ReturnTo: "/x"}
	t.Run("success creates a session with a new id", func(t *testing.T) {
		f := newLoginFixture(t, loginCfg)
		f.requests.EXPECT().TakeAuthRequest(gomock.Any(), app.Digest("st"), f.now).Return(pending, nil)
		f.idp.EXPECT().ExchangeCode(gomock.Any(), "code-1", pending.Request).Return(tokenSet(f.now, domain.RoleLead), nil)
		var created ports.LoginSession
		f.sessions.EXPECT().CreateLoginSession(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, s ports.LoginSession) error {
			created = s
			return nil
		})
		res, err := f.login.Callback(t.Context(), "st", "code-1", "")
		if err != nil {
			t.Fatalf("Callback: %v", err)
		}
		if !app.ValidCookie(res.Cookie) || created.IDHash != app.Digest(res.Cookie) || res.ReturnTo != "/x" ||
			!slices.Equal(res.Principal.Roles, []domain.Role{domain.RoleLead}) || !created.ExpiresAt.Equal(f.now.Add(8*time.Hour)) {
			t.Errorf("Callback: got %+v, created %+v", res, created)
		}
	})
	tests := []struct {
		name, state, code, providerErr string
		take                           error
	}{
		{"missing state", "", "c", "", nil},
		{"unknown or replayed state", "st", "c", "", fmt.Errorf("x: %w", domain.ErrNotFound)},
		{"provider error", "st", "", "access_denied", nil},
		{"no code", "st", "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newLoginFixture(t, loginCfg)
			if tt.state != "" {
				f.requests.EXPECT().TakeAuthRequest(gomock.Any(), gomock.Any(), gomock.Any()).Return(pending, tt.take)
			}
			// No ExchangeCode expected: the token endpoint is never called.
			if _, err := f.login.Callback(t.Context(), tt.state, tt.code, tt.providerErr); !errors.Is(err, domain.ErrUnauthenticated) {
				t.Errorf("got %v, want ErrUnauthenticated", err)
			}
		})
	}
}

func TestPasswordLogin(t *testing.T) {
	limits := []ports.LoginLimit{
		{Key: "pair:10.0.0.1|alice", Limit: 3},
		{Key: "user:alice", Limit: app.UserCeiling * 3},
		{Key: "addr:10.0.0.1", Limit: app.AddressLimit * 3},
	}
	reserve := func(f *loginFixture, res ports.LoginReservation) {
		f.throttle.EXPECT().ReserveLoginAttempt(gomock.Any(), limits, f.now, f.now.Add(-15*time.Minute)).Return(res, nil)
	}
	t.Run("success releases the attempt and forgives this address's failures", func(t *testing.T) {
		f := newLoginFixture(t, loginCfg)
		f.idp.EXPECT().Ready().Return(nil)
		reserve(f, ports.LoginReservation{OK: true})
		f.idp.EXPECT().PasswordGrant(gomock.Any(), "Alice", "pw").Return(tokenSet(f.now, domain.RoleAdmin), nil)
		f.throttle.EXPECT().ReleaseLoginAttempt(gomock.Any(), []string{"user:alice", "addr:10.0.0.1"}, f.now).Return(nil)
		f.throttle.EXPECT().ClearLoginFailures(gomock.Any(), "pair:10.0.0.1|alice").Return(nil)
		f.sessions.EXPECT().CreateLoginSession(gomock.Any(), gomock.Any()).Return(nil)
		res, err := f.login.PasswordLogin(t.Context(), "Alice", "pw", "10.0.0.1")
		if err != nil || !slices.Equal(res.Principal.Roles, []domain.Role{domain.RoleAdmin}) {
			t.Fatalf("PasswordLogin: got %+v, %v", res, err)
		}
	})
	t.Run("failure keeps the recorded attempt, one message", func(t *testing.T) {
		f := newLoginFixture(t, loginCfg)
		f.idp.EXPECT().Ready().Return(nil)
		reserve(f, ports.LoginReservation{OK: true})
		f.idp.EXPECT().PasswordGrant(gomock.Any(), "alice", "bad").Return(ports.TokenSet{}, fmt.Errorf("refused: %w", domain.ErrUnauthenticated))
		if _, err := f.login.PasswordLogin(t.Context(), "alice", "bad", "10.0.0.1"); !errors.Is(err, app.ErrBadCredentials) {
			t.Errorf("got %v, want ErrBadCredentials", err)
		}
	})
	t.Run("limit reached: 429 before the provider is asked", func(t *testing.T) {
		f := newLoginFixture(t, loginCfg)
		f.idp.EXPECT().Ready().Return(nil)
		reserve(f, ports.LoginReservation{Oldest: f.now.Add(-10 * time.Minute)})
		_, err := f.login.PasswordLogin(t.Context(), "alice", "pw", "10.0.0.1")
		var ra *app.RetryAfter
		if !errors.As(err, &ra) || !errors.Is(err, domain.ErrTooManyRequests) || ra.Wait != 5*time.Minute {
			t.Errorf("got %v, want RetryAfter 5m", err)
		}
	})
	t.Run("provider down or refusing our client: 503, not counted", func(t *testing.T) {
		f := newLoginFixture(t, loginCfg)
		f.idp.EXPECT().Ready().Return(nil)
		reserve(f, ports.LoginReservation{OK: true})
		f.idp.EXPECT().PasswordGrant(gomock.Any(), gomock.Any(), gomock.Any()).Return(ports.TokenSet{}, fmt.Errorf("down: %w", domain.ErrUnavailable))
		f.throttle.EXPECT().ReleaseLoginAttempt(gomock.Any(), []string{"user:alice", "addr:10.0.0.1", "pair:10.0.0.1|alice"}, f.now).Return(nil)
		if _, err := f.login.PasswordLogin(t.Context(), "alice", "pw", "10.0.0.1"); !errors.Is(err, domain.ErrUnavailable) {
			t.Errorf("got %v, want ErrUnavailable", err)
		}
	})
	inputs := []struct {
		name, user, pw string
		want           error
	}{
		{"empty username", "", "pw", domain.ErrInvalidInput},
		{"empty password", "alice", "", domain.ErrInvalidInput},
		{"long username", string(make([]byte, 256)), "pw", domain.ErrInvalidInput},
	}
	for _, tt := range inputs {
		t.Run(tt.name, func(t *testing.T) {
			f := newLoginFixture(t, loginCfg)
			if _, err := f.login.PasswordLogin(t.Context(), tt.user, tt.pw, "a"); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("switched off", func(t *testing.T) {
		cfg := loginCfg
		cfg.PasswordLogin = false
		f := newLoginFixture(t, cfg)
		if _, err := f.login.PasswordLogin(t.Context(), "alice", "pw", "a"); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("got %v, want ErrNotFound", err)
		}
	})
}

func stored(f *loginFixture, mut func(*ports.LoginSession)) ports.LoginSession {
	s := ports.LoginSession{IDHash: app.Digest(goodCookie), Tokens: tokenSet(f.now, domain.RoleAdmin), Version: 1,
		CreatedAt: f.now.Add(-time.Hour), LastSeen: f.now.Add(-30 * time.Second), ExpiresAt: f.now.Add(7 * time.Hour)}
	if mut != nil {
		mut(&s)
	}
	return s
}

func TestAuthenticateSession(t *testing.T) {
	t.Run("fresh session, no refresh, no write", func(t *testing.T) {
		f := newLoginFixture(t, loginCfg)
		f.sessions.EXPECT().GetLoginSession(gomock.Any(), app.Digest(goodCookie)).Return(stored(f, nil), nil)
		p, err := f.login.Authenticate(t.Context(), goodCookie)
		if err != nil || p.Subject != "sub-1" || p.Method != domain.MethodOIDC || !slices.Equal(p.Roles, []domain.Role{domain.RoleAdmin}) {
			t.Errorf("got %+v, %v", p, err)
		}
	})
	t.Run("last use recorded once a minute", func(t *testing.T) {
		f := newLoginFixture(t, loginCfg)
		f.sessions.EXPECT().GetLoginSession(gomock.Any(), gomock.Any()).Return(stored(f, func(s *ports.LoginSession) { s.LastSeen = f.now.Add(-2 * time.Minute) }), nil)
		f.sessions.EXPECT().TouchLoginSession(gomock.Any(), app.Digest(goodCookie), f.now).Return(nil)
		if _, err := f.login.Authenticate(t.Context(), goodCookie); err != nil {
			t.Errorf("got %v", err)
		}
	})
	t.Run("near expiry: refresh takes the roles afresh", func(t *testing.T) {
		f := newLoginFixture(t, loginCfg)
		s := stored(f, func(s *ports.LoginSession) { s.Tokens.AccessExpiry = f.now.Add(30 * time.Second) })
		f.sessions.EXPECT().GetLoginSession(gomock.Any(), gomock.Any()).Return(s, nil)
		next := tokenSet(f.now, domain.RoleUser)
		next.IDToken = ""
		f.idp.EXPECT().Refresh(gomock.Any(), "rt").Return(next, nil)
		f.sessions.EXPECT().UpdateLoginSession(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, u ports.LoginSession) error {
			if u.Version != 2 || u.Tokens.IDToken != "it" || !u.LastSeen.Equal(f.now) {
				t.Errorf("update: version %d id token %q last seen %v", u.Version, u.Tokens.IDToken, u.LastSeen)
			}
			return nil
		})
		p, err := f.login.Authenticate(t.Context(), goodCookie)
		if err != nil || !slices.Equal(p.Roles, []domain.Role{domain.RoleUser}) {
			t.Errorf("got %+v, %v; want USER after refresh", p, err)
		}
	})
	t.Run("refresh refused ends the session", func(t *testing.T) {
		f := newLoginFixture(t, loginCfg)
		f.sessions.EXPECT().GetLoginSession(gomock.Any(), gomock.Any()).Return(stored(f, func(s *ports.LoginSession) { s.Tokens.AccessExpiry = f.now.Add(-time.Second) }), nil)
		f.idp.EXPECT().Refresh(gomock.Any(), "rt").Return(ports.TokenSet{}, fmt.Errorf("invalid_grant: %w", domain.ErrUnauthenticated))
		f.sessions.EXPECT().GetLoginSession(gomock.Any(), gomock.Any()).Return(stored(f, nil), nil) // same version: nobody refreshed
		f.sessions.EXPECT().DeleteLoginSession(gomock.Any(), app.Digest(goodCookie)).Return(nil)
		if _, err := f.login.Authenticate(t.Context(), goodCookie); !errors.Is(err, domain.ErrUnauthenticated) {
			t.Errorf("got %v, want ErrUnauthenticated", err)
		}
	})
	t.Run("refresh refused because another instance rotated the refresh token first", func(t *testing.T) {
		f := newLoginFixture(t, loginCfg)
		theirs := stored(f, func(s *ports.LoginSession) { s.Version = 2; s.Tokens.Roles.Roles = []domain.Role{domain.RoleLead} })
		gomock.InOrder(
			f.sessions.EXPECT().GetLoginSession(gomock.Any(), gomock.Any()).Return(stored(f, func(s *ports.LoginSession) { s.Tokens.AccessExpiry = f.now.Add(-time.Second) }), nil),
			f.idp.EXPECT().Refresh(gomock.Any(), "rt").Return(ports.TokenSet{}, fmt.Errorf("invalid_grant: %w", domain.ErrUnauthenticated)),
			f.sessions.EXPECT().GetLoginSession(gomock.Any(), gomock.Any()).Return(theirs, nil),
		)
		p, err := f.login.Authenticate(t.Context(), goodCookie)
		if err != nil || !slices.Equal(p.Roles, []domain.Role{domain.RoleLead}) {
			t.Errorf("got %+v, %v; want the other instance's session (LEAD), not a logout", p, err)
		}
	})
	t.Run("no refresh token, access token near expiry: served without asking the provider", func(t *testing.T) {
		f := newLoginFixture(t, loginCfg)
		f.sessions.EXPECT().GetLoginSession(gomock.Any(), gomock.Any()).Return(stored(f, func(s *ports.LoginSession) {
			s.Tokens.RefreshToken, s.Tokens.RefreshExpiry, s.Tokens.AccessExpiry = "", time.Time{}, f.now.Add(30*time.Second)
		}), nil)
		if _, err := f.login.Authenticate(t.Context(), goodCookie); err != nil {
			t.Errorf("got %v, want success", err)
		}
	})
	t.Run("no refresh token, access token expired: the session ends (401, never 503)", func(t *testing.T) {
		f := newLoginFixture(t, loginCfg)
		f.sessions.EXPECT().GetLoginSession(gomock.Any(), gomock.Any()).Return(stored(f, func(s *ports.LoginSession) {
			s.Tokens.RefreshToken, s.Tokens.RefreshExpiry, s.Tokens.AccessExpiry = "", time.Time{}, f.now.Add(-time.Second)
		}), nil)
		f.sessions.EXPECT().DeleteLoginSession(gomock.Any(), app.Digest(goodCookie)).Return(nil)
		if _, err := f.login.Authenticate(t.Context(), goodCookie); !errors.Is(err, domain.ErrUnauthenticated) || errors.Is(err, domain.ErrUnavailable) {
			t.Errorf("got %v, want ErrUnauthenticated only", err)
		}
	})
	t.Run("refresh naming another subject ends the session", func(t *testing.T) {
		f := newLoginFixture(t, loginCfg)
		f.sessions.EXPECT().GetLoginSession(gomock.Any(), gomock.Any()).Return(stored(f, func(s *ports.LoginSession) { s.Tokens.AccessExpiry = f.now.Add(-time.Second) }), nil)
		other := tokenSet(f.now, domain.RoleAdmin)
		other.Subject = "sub-2"
		f.idp.EXPECT().Refresh(gomock.Any(), "rt").Return(other, nil)
		f.sessions.EXPECT().DeleteLoginSession(gomock.Any(), app.Digest(goodCookie)).Return(nil)
		if _, err := f.login.Authenticate(t.Context(), goodCookie); !errors.Is(err, domain.ErrUnauthenticated) {
			t.Errorf("got %v, want ErrUnauthenticated", err)
		}
	})
	t.Run("provider down, access token still valid: keep serving", func(t *testing.T) {
		f := newLoginFixture(t, loginCfg)
		f.sessions.EXPECT().GetLoginSession(gomock.Any(), gomock.Any()).Return(stored(f, func(s *ports.LoginSession) { s.Tokens.AccessExpiry = f.now.Add(30 * time.Second) }), nil)
		f.idp.EXPECT().Refresh(gomock.Any(), "rt").Return(ports.TokenSet{}, fmt.Errorf("down: %w", domain.ErrUnavailable))
		if _, err := f.login.Authenticate(t.Context(), goodCookie); err != nil {
			t.Errorf("got %v, want success", err)
		}
	})
	t.Run("provider down, access token expired: 503, session kept", func(t *testing.T) {
		f := newLoginFixture(t, loginCfg)
		f.sessions.EXPECT().GetLoginSession(gomock.Any(), gomock.Any()).Return(stored(f, func(s *ports.LoginSession) { s.Tokens.AccessExpiry = f.now.Add(-time.Second) }), nil)
		f.idp.EXPECT().Refresh(gomock.Any(), "rt").Return(ports.TokenSet{}, fmt.Errorf("down: %w", domain.ErrUnavailable))
		if _, err := f.login.Authenticate(t.Context(), goodCookie); !errors.Is(err, domain.ErrUnavailable) {
			t.Errorf("got %v, want ErrUnavailable", err)
		}
	})
	t.Run("another instance refreshed first: its result is used", func(t *testing.T) {
		f := newLoginFixture(t, loginCfg)
		s := stored(f, func(s *ports.LoginSession) { s.Tokens.AccessExpiry = f.now.Add(10 * time.Second) })
		theirs := stored(f, func(s *ports.LoginSession) { s.Version = 2; s.Tokens.Roles.Roles = []domain.Role{domain.RoleAuditor} })
		gomock.InOrder(
			f.sessions.EXPECT().GetLoginSession(gomock.Any(), gomock.Any()).Return(s, nil),
			f.idp.EXPECT().Refresh(gomock.Any(), "rt").Return(tokenSet(f.now, domain.RoleUser), nil),
			f.sessions.EXPECT().UpdateLoginSession(gomock.Any(), gomock.Any()).Return(fmt.Errorf("x: %w", domain.ErrConflict)),
			f.sessions.EXPECT().GetLoginSession(gomock.Any(), gomock.Any()).Return(theirs, nil),
		)
		p, err := f.login.Authenticate(t.Context(), goodCookie)
		if err != nil || !slices.Equal(p.Roles, []domain.Role{domain.RoleAuditor}) {
			t.Errorf("got %+v, %v; want the other instance's AUDITOR", p, err)
		}
	})
	ended := []struct {
		name string
		mut  func(f *loginFixture, s *ports.LoginSession)
	}{
		{"idle too long", func(f *loginFixture, s *ports.LoginSession) { s.LastSeen = f.now.Add(-time.Hour) }},
		{"absolute lifetime over", func(f *loginFixture, s *ports.LoginSession) { s.ExpiresAt = f.now }},
		{"refresh token and access token expired", func(f *loginFixture, s *ports.LoginSession) {
			s.Tokens.RefreshExpiry, s.Tokens.AccessExpiry = f.now.Add(-time.Second), f.now.Add(-time.Second)
		}},
	}
	for _, tt := range ended {
		t.Run(tt.name, func(t *testing.T) {
			f := newLoginFixture(t, loginCfg)
			f.sessions.EXPECT().GetLoginSession(gomock.Any(), gomock.Any()).Return(stored(f, func(s *ports.LoginSession) { tt.mut(f, s) }), nil)
			f.sessions.EXPECT().DeleteLoginSession(gomock.Any(), gomock.Any()).Return(nil)
			if _, err := f.login.Authenticate(t.Context(), goodCookie); !errors.Is(err, domain.ErrUnauthenticated) {
				t.Errorf("got %v, want ErrUnauthenticated", err)
			}
		})
	}
	t.Run("malformed cookie never reaches the store", func(t *testing.T) {
		f := newLoginFixture(t, loginCfg)
		for _, c := range []string{"", "short", goodCookie + "x", "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP=", "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNO\x00Q"} {
			if _, err := f.login.Authenticate(t.Context(), c); !errors.Is(err, domain.ErrUnauthenticated) {
				t.Errorf("cookie %q: got %v, want ErrUnauthenticated", c, err)
			}
		}
	})
	t.Run("unknown cookie", func(t *testing.T) {
		f := newLoginFixture(t, loginCfg)
		f.sessions.EXPECT().GetLoginSession(gomock.Any(), gomock.Any()).Return(ports.LoginSession{}, fmt.Errorf("x: %w", domain.ErrNotFound))
		if _, err := f.login.Authenticate(t.Context(), goodCookie); !errors.Is(err, domain.ErrUnauthenticated) {
			t.Errorf("got %v, want ErrUnauthenticated", err)
		}
	})
}

func TestLogout(t *testing.T) {
	f := newLoginFixture(t, loginCfg)
	f.sessions.EXPECT().GetLoginSession(gomock.Any(), gomock.Any()).Return(stored(f, nil), nil)
	f.sessions.EXPECT().DeleteLoginSession(gomock.Any(), app.Digest(goodCookie)).Return(nil)
	f.idp.EXPECT().Logout(gomock.Any(), "rt").Return(fmt.Errorf("down: %w", domain.ErrUnavailable))
	f.idp.EXPECT().EndSessionURL("it").Return("https://kc/logout?id_token_hint=it")
	end, provErr, err := f.login.Logout(t.Context(), goodCookie)
	if err != nil || end != "https://kc/logout?id_token_hint=it" || !errors.Is(provErr, domain.ErrUnavailable) {
		t.Errorf("Logout: got %q, %v, %v", end, provErr, err)
	}
}

func TestCredentialsRouting(t *testing.T) {
	c := gomock.NewController(t)
	jwt, key := mocks.NewMockAuthenticator(c), mocks.NewMockAuthenticator(c)
	f := newLoginFixture(t, loginCfg)
	creds := &app.Credentials{Login: f.login, Tokens: jwt, Keys: key}
	unauth := fmt.Errorf("no: %w", domain.ErrUnauthenticated)
	unavailable := fmt.Errorf("down: %w", domain.ErrUnavailable)

	jwt.EXPECT().Authenticate(gomock.Any(), gomock.Any()).Return(domain.Principal{}, unauth)
	key.EXPECT().Authenticate(gomock.Any(), gomock.Any()).Return(domain.Principal{Subject: "apikey:x"}, nil)
	if p, err := creds.Authenticate(t.Context(), ports.Credential{Kind: ports.CredentialBearer, Value: "a.b.c"}); err != nil || p.Subject != "apikey:x" {
		t.Errorf("JWT-shaped API key after the JWT verifier: got %+v, %v", p, err)
	}
	jwt.EXPECT().Authenticate(gomock.Any(), gomock.Any()).Return(domain.Principal{}, unavailable)
	key.EXPECT().Authenticate(gomock.Any(), gomock.Any()).Return(domain.Principal{}, unauth)
	if _, err := creds.Authenticate(t.Context(), ports.Credential{Kind: ports.CredentialBearer, Value: "a.b.c"}); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("verifier unavailable, key refused: got %v, want ErrUnavailable", err)
	}
	jwt.EXPECT().Authenticate(gomock.Any(), gomock.Any()).Return(domain.Principal{}, unauth)
	key.EXPECT().Authenticate(gomock.Any(), gomock.Any()).Return(domain.Principal{}, unauth)
	if _, err := creds.Authenticate(t.Context(), ports.Credential{Kind: ports.CredentialBearer, Value: "a.b.c"}); !errors.Is(err, domain.ErrUnauthenticated) {
		t.Errorf("both refuse: got %v, want ErrUnauthenticated", err)
	}
	refused := domain.RefuseToken("oidc_token_audience", domain.ErrUnauthenticated, "not ours")
	jwt.EXPECT().Authenticate(gomock.Any(), gomock.Any()).Return(domain.Principal{}, refused)
	key.EXPECT().Authenticate(gomock.Any(), gomock.Any()).Return(domain.Principal{}, unauth)
	var got *domain.TokenRefusal
	if _, err := creds.Authenticate(t.Context(), ports.Credential{Kind: ports.CredentialBearer, Value: "a.b.c"}); !errors.As(err, &got) || got.Code != "oidc_token_audience" {
		t.Errorf("verifier refuses with a reason: got %v, want that reason kept for the audit and the log", err)
	}
	if _, err := creds.Authenticate(t.Context(), ports.Credential{}); !errors.Is(err, domain.ErrUnauthenticated) {
		t.Errorf("no credential: got %v, want ErrUnauthenticated", err)
	}
	f.sessions.EXPECT().GetLoginSession(gomock.Any(), gomock.Any()).Return(stored(f, nil), nil)
	if p, err := creds.Authenticate(t.Context(), ports.Credential{Kind: ports.CredentialCookie, Value: goodCookie}); err != nil || p.Subject != "sub-1" {
		t.Errorf("cookie: got %+v, %v", p, err)
	}
}

func TestSweep(t *testing.T) {
	f := newLoginFixture(t, loginCfg)
	f.sessions.EXPECT().DeleteExpiredLoginSessions(gomock.Any(), f.now, f.now.Add(-time.Hour)).Return(2, nil)
	if n, err := f.login.Sweep(t.Context()); n != 2 || err != nil {
		t.Errorf("Sweep: got %d, %v", n, err)
	}
}
