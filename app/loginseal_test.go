package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// TestTokensAreSealedAtRest: the store never sees the provider's tokens in
// clear, they open again on read, and a session sealed under another key
// (the client secret was rotated) or moved to another id is ended.
func TestTokensAreSealedAtRest(t *testing.T) {
	cfg := loginCfg
	cfg.TokenKey = []byte("0123456789abcdef0123456789abcdef")
	f := newLoginFixture(t, cfg)
	var row ports.LoginSession
	f.idp.EXPECT().Ready().Return(nil)
	f.throttle.EXPECT().ReserveLoginAttempt(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).Return(ports.LoginReservation{OK: true}, nil)
	f.throttle.EXPECT().ReleaseLoginAttempt(gomock.Any(), gomock.Any(), gomock.Any()).Return(nil)
	f.throttle.EXPECT().ClearLoginFailures(gomock.Any(), gomock.Any()).Return(nil)
	ts := tokenSet(f.now, domain.RoleAdmin)
	ts.AccessToken, ts.RefreshToken, ts.IDToken = "access.jwt.value", "refresh-secret", "id.jwt.value"
	f.idp.EXPECT().PasswordGrant(gomock.Any(), "alice", "pw").Return(ts, nil)
	f.sessions.EXPECT().CreateLoginSession(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, s ports.LoginSession) error {
		row = s
		return nil
	})
	res, err := f.login.PasswordLogin(t.Context(), "alice", "pw", "a")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{row.Tokens.AccessToken, row.Tokens.RefreshToken, row.Tokens.IDToken} {
		if !strings.HasPrefix(v, "v1.") || strings.Contains(v, "secret") || strings.Contains(v, "jwt") {
			t.Errorf("stored token %q: want it sealed", v)
		}
	}

	// Read back: opened.
	f.sessions.EXPECT().GetLoginSession(gomock.Any(), row.IDHash).Return(row, nil)
	f.sessions.EXPECT().DeleteLoginSession(gomock.Any(), row.IDHash).Return(nil)
	f.idp.EXPECT().Logout(gomock.Any(), "refresh-secret").Return(nil)
	f.idp.EXPECT().EndSessionURL("id.jwt.value").Return("")
	if _, _, err := f.login.Logout(t.Context(), res.Cookie); err != nil {
		t.Fatalf("Logout: %v", err)
	}

	// Another key cannot open it: the session ends.
	other := loginCfg
	other.TokenKey = []byte("fedcba9876543210fedcba9876543210")
	g := newLoginFixture(t, other)
	g.sessions.EXPECT().GetLoginSession(gomock.Any(), row.IDHash).Return(row, nil)
	g.sessions.EXPECT().DeleteLoginSession(gomock.Any(), row.IDHash).Return(nil)
	if _, err := g.login.Authenticate(t.Context(), res.Cookie); !errors.Is(err, domain.ErrUnauthenticated) {
		t.Errorf("session sealed under another key: got %v, want ErrUnauthenticated", err)
	}
	// Moved to another id: does not open either.
	h := newLoginFixture(t, cfg)
	h.sessions.EXPECT().GetLoginSession(gomock.Any(), app.Digest(goodCookie)).Return(row, nil)
	h.sessions.EXPECT().DeleteLoginSession(gomock.Any(), app.Digest(goodCookie)).Return(nil)
	if _, err := h.login.Authenticate(t.Context(), goodCookie); !errors.Is(err, domain.ErrUnauthenticated) {
		t.Errorf("tokens moved to another session id: got %v, want ErrUnauthenticated", err)
	}
	bad := loginCfg
	bad.TokenKey = []byte("short")
	if _, err := app.NewLogin(bad, nil, nil, nil, nil, nil); !errors.Is(err, domain.ErrInvalidInput) {
		t.Errorf("short key: got %v, want ErrInvalidInput", err)
	}
}
