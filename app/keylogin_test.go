package app_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
)

var keyLoginCfg = app.LoginConfig{SessionIdle: time.Hour, SessionMax: 8 * time.Hour, RefreshBefore: time.Minute,
	LoginFailures: 3, LoginWindow: 15 * time.Minute, Method: domain.MethodDebug}

func newKeyLoginFixture(t *testing.T) (*loginFixture, *mocks.MockAuthenticator) {
	c := gomock.NewController(t)
	f := &loginFixture{sessions: mocks.NewMockLoginSessionStore(c), throttle: mocks.NewMockLoginThrottle(c),
		clock: mocks.NewMockClock(c), now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	f.clock.EXPECT().Now().DoAndReturn(func() time.Time { return f.now }).AnyTimes()
	keys := mocks.NewMockAuthenticator(c)
	login, err := app.NewKeyLogin(keyLoginCfg, keys, f.sessions, f.throttle, f.clock)
	if err != nil {
		t.Fatal(err)
	}
	f.login = login
	return f, keys
}

func TestKeyLogin(t *testing.T) {
	lead := domain.Principal{Subject: "debug-lead", Roles: []domain.Role{domain.RoleLead}, Method: domain.MethodDebug, RoleSource: "debug key"}
	tests := []struct {
		name      string
		key       string
		authn     error // what the key authenticator answers; nil: lead
		throttled bool
		wantErr   error
		released  bool
	}{
		{name: "a good key starts a session", key: "debug-lead", released: true},
		{name: "a wrong key is refused and counts", key: "nope-nope", authn: domain.ErrUnauthenticated, wantErr: app.ErrBadKey},
		{name: "an unusable key is refused unasked", key: "a b", wantErr: app.ErrBadKey},
		{name: "too many failures from the address", key: "debug-lead", throttled: true, wantErr: domain.ErrTooManyRequests},
		{name: "the key source down does not count", key: "debug-lead", authn: domain.ErrUnavailable, wantErr: domain.ErrUnavailable, released: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, keys := newKeyLoginFixture(t)
			asked := tt.key != "a b"
			if asked {
				f.throttle.EXPECT().ReserveLoginAttempt(gomock.Any(), []ports.LoginLimit{{Key: "key-addr:192.0.2.1", Limit: app.AddressLimit * 3}}, f.now, f.now.Add(-15*time.Minute)).
					Return(ports.LoginReservation{OK: !tt.throttled, Oldest: f.now.Add(-time.Minute)}, nil)
			}
			if asked && !tt.throttled {
				keys.EXPECT().Authenticate(gomock.Any(), ports.Credential{Kind: ports.CredentialBearer, Value: tt.key}).DoAndReturn(
					func(context.Context, ports.Credential) (domain.Principal, error) {
						if tt.authn != nil {
							return domain.Principal{}, tt.authn
						}
						return lead, nil
					})
			}
			if tt.released {
				f.throttle.EXPECT().ReleaseLoginAttempt(gomock.Any(), []string{"key-addr:192.0.2.1"}, f.now).Return(nil)
			}
			var stored ports.LoginSession
			if tt.wantErr == nil {
				f.sessions.EXPECT().CreateLoginSession(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, s ports.LoginSession) error {
					stored = s
					return nil
				})
			}
			res, err := f.login.KeyLogin(t.Context(), tt.key, "192.0.2.1")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("KeyLogin error: got %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				return
			}
			if got, want := res.Principal, lead; got.Subject != want.Subject || !slices.Equal(got.Roles, want.Roles) || got.Method != want.Method || got.RoleSource != want.RoleSource {
				t.Errorf("principal: got %+v, want %+v", got, want)
			}
			if got, want := stored.IDHash, app.Digest(res.Cookie); got != want {
				t.Errorf("stored id hash: got %q, want the cookie's digest %q", got, want)
			}
			if stored.Tokens.AccessToken != "" || stored.Tokens.RefreshToken != "" || stored.Tokens.IDToken != "" {
				t.Errorf("stored provider tokens %+v: want none", stored.Tokens)
			}
			if got, want := stored.ExpiresAt, f.now.Add(8*time.Hour); !got.Equal(want) {
				t.Errorf("session end: got %v, want %v", got, want)
			}
		})
	}
}

// A key session has no refresh token: near its end it is served as it is
// (there is no provider to ask), and past its end it is refused.
func TestKeySessionIsNeverRefreshed(t *testing.T) {
	f, _ := newKeyLoginFixture(t)
	s := ports.LoginSession{IDHash: app.Digest(goodCookie), Version: 1, CreatedAt: f.now, LastSeen: f.now, ExpiresAt: f.now.Add(8 * time.Hour),
		Tokens: ports.TokenSet{Subject: "debug-admin", Roles: domain.RoleExtraction{Roles: []domain.Role{domain.RoleAdmin}, Source: "debug key"},
			AccessExpiry: f.now.Add(8 * time.Hour)}}
	f.now = f.now.Add(8*time.Hour - 30*time.Second) // inside the refresh window
	s.LastSeen = f.now.Add(-time.Minute)
	f.sessions.EXPECT().GetLoginSession(gomock.Any(), s.IDHash).Return(s, nil).AnyTimes()
	f.sessions.EXPECT().TouchLoginSession(gomock.Any(), s.IDHash, gomock.Any()).Return(nil).AnyTimes()
	p, err := f.login.Authenticate(t.Context(), goodCookie)
	if err != nil {
		t.Fatalf("Authenticate near the end: %v", err)
	}
	if got, want := p.Method, domain.MethodDebug; got != want {
		t.Errorf("method: got %q, want %q", got, want)
	}
	f.now = f.now.Add(time.Minute)
	f.sessions.EXPECT().DeleteLoginSession(gomock.Any(), s.IDHash).Return(nil)
	if _, err := f.login.Authenticate(t.Context(), goodCookie); !errors.Is(err, domain.ErrUnauthenticated) {
		t.Errorf("Authenticate past the end: got %v, want ErrUnauthenticated", err)
	}
}
