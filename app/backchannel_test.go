package app_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
)

func TestBackchannelLogout(t *testing.T) {
	refused := fmt.Errorf("logout token: no events: %w", domain.ErrInvalidInput)
	for _, tc := range []struct {
		name   string
		token  ports.LogoutToken
		verify error
		replay bool
		// wantSID and wantSub are what DeleteLoginSessionsOf must get.
		wantSID, wantSub string
		revoke           bool
		ended            []string
		wantErr          error
	}{
		{name: "sid: that session ends and its Bearer tokens are refused",
			token:   ports.LogoutToken{ID: "j1", SessionID: "kc-sid", Subject: "alice"},
			wantSID: app.Digest("kc-sid"), wantSub: "alice", revoke: true, ended: []string{"h1", "h2"}},
		{name: "sub only: every session of the subject ends",
			token:   ports.LogoutToken{ID: "j2", Subject: "alice"},
			wantSub: "alice", ended: []string{"h3"}},
		{name: "no session of that sid here: 200 with nothing ended",
			token:   ports.LogoutToken{ID: "j3", SessionID: "other"},
			wantSID: app.Digest("other"), revoke: true},
		{name: "a token the provider adapter refuses ends nothing", verify: refused, wantErr: domain.ErrInvalidInput},
		{name: "a replayed token ends nothing",
			token: ports.LogoutToken{ID: "j1", SessionID: "kc-sid"}, replay: true, wantErr: domain.ErrInvalidInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newLoginFixture(t, loginCfg)
			tc.token.AcceptedUntil = f.now.Add(2 * time.Minute)
			f.idp.EXPECT().VerifyLogoutToken(gomock.Any(), "raw").Return(tc.token, tc.verify)
			if tc.verify == nil {
				var err error
				if tc.replay {
					err = fmt.Errorf("used: %w", domain.ErrConflict)
				}
				f.sessions.EXPECT().UseLogoutToken(gomock.Any(), app.Digest(tc.token.ID), tc.token.AcceptedUntil, f.now).Return(err)
			}
			if tc.revoke {
				f.sessions.EXPECT().RevokeProviderSession(gomock.Any(), tc.wantSID, f.now.Add(loginCfg.SessionMax)).Return(nil)
			}
			if tc.wantErr == nil {
				f.sessions.EXPECT().DeleteLoginSessionsOf(gomock.Any(), tc.wantSID, tc.wantSub).Return(tc.ended, nil)
			}
			n, err := f.login.BackchannelLogout(t.Context(), "raw")
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("BackchannelLogout: got %v, want %v", err, tc.wantErr)
			}
			if n != len(tc.ended) {
				t.Errorf("ended %d sessions, want %d", n, len(tc.ended))
			}
		})
	}
}

func TestBearerOfEndedProviderSessionRefused(t *testing.T) {
	c := gomock.NewController(t)
	jwt := mocks.NewMockAuthenticator(c)
	f := newLoginFixture(t, loginCfg)
	creds := &app.Credentials{Login: f.login, Tokens: jwt}
	bearer := ports.Credential{Kind: ports.CredentialBearer, Value: "at"}
	down := fmt.Errorf("store down: %w", domain.ErrUnavailable)
	for _, tc := range []struct {
		name    string
		sid     string
		revoked bool
		err     error
		wantErr error
	}{
		{name: "live session", sid: "s1"},
		{name: "ended by back-channel logout", sid: "s1", revoked: true, wantErr: domain.ErrUnauthenticated},
		{name: "store unreachable: refused, not let through", sid: "s1", err: down, wantErr: domain.ErrUnavailable},
		{name: "token without sid: nothing to check", sid: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jwt.EXPECT().Authenticate(gomock.Any(), bearer).Return(domain.Principal{Subject: "alice", SessionID: tc.sid}, nil)
			if tc.sid != "" {
				f.sessions.EXPECT().ProviderSessionRevoked(gomock.Any(), app.Digest(tc.sid), f.now).Return(tc.revoked, tc.err)
			}
			p, err := creds.Authenticate(t.Context(), bearer)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("Authenticate: got %+v, %v; want error %v", p, err, tc.wantErr)
			}
			if tc.wantErr == nil && p.Subject != "alice" {
				t.Errorf("principal %+v", p)
			}
		})
	}
}

// TestBearerRevocationsFromMemory: with login sessions kept in memory, a
// Bearer token's provider session is checked without a store read: the
// revocations are loaded when the watcher goes live and each later one is
// reported by it (from any instance); while it is not live the store answers.
func TestBearerRevocationsFromMemory(t *testing.T) {
	c := gomock.NewController(t)
	jwt := mocks.NewMockAuthenticator(c)
	bearer := ports.Credential{Kind: ports.CredentialBearer, Value: "at"}
	for _, tc := range []struct {
		name string
		// loaded are the revocations stored when the watcher went live;
		// then runs after that.
		loaded  []string
		then    func(w *watcherHandle)
		store   bool // the store is asked (the mock fails the test otherwise)
		wantErr error
	}{
		{name: "not revoked: no read", then: func(*watcherHandle) {}},
		{name: "revoked before: loaded", loaded: []string{app.Digest("s1")}, then: func(*watcherHandle) {}, wantErr: domain.ErrUnauthenticated},
		{name: "revoked on another instance: reported", then: func(w *watcherHandle) { w.changed(ports.RevokedSessionKey(app.Digest("s1"))) }, wantErr: domain.ErrUnauthenticated},
		{name: "another session revoked", then: func(w *watcherHandle) { w.changed(ports.RevokedSessionKey(app.Digest("s2"))) }},
		{name: "watcher not live: the store answers", then: func(w *watcherHandle) { w.live(false) }, store: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newLoginFixture(t, loginCfg)
			f.sessions.EXPECT().RevokedProviderSessions(gomock.Any(), gomock.Any()).Return(tc.loaded, nil)
			w := withMemory(t, f, true)
			tc.then(w)
			if tc.store {
				f.sessions.EXPECT().ProviderSessionRevoked(gomock.Any(), app.Digest("s1"), f.now).Return(false, nil)
			}
			jwt.EXPECT().Authenticate(gomock.Any(), bearer).Return(domain.Principal{Subject: "alice", SessionID: "s1"}, nil)
			creds := &app.Credentials{Login: f.login, Tokens: jwt}
			if _, err := creds.Authenticate(t.Context(), bearer); !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("Authenticate: %v; want %v", err, tc.wantErr)
			}
		})
	}
}
