// Command zitadelop is the example OpenID provider of zitadel/oidc
// (github.com/zitadel/oidc/v3/example/server: its storage, login page and
// op.Provider, unchanged) with what an e2e run must choose: the port, the
// users, the redirect URI, the access-token lifetime, and a roles claim.
//
// The example has no role claim, so a thin wrapper of its storage adds
// ext.roles (nested, as Hydra puts custom claims under ext) for the users
// of ROLES: for client "web" (opaque access tokens) at the userinfo and
// introspection endpoints only, for client "jwt" (JWT access tokens) in
// the id token and the access token too. Both clients use the example's
// WebClient (code and refresh grants, no password grant), secret "secret".
//
// Environment: PORT (listens on 127.0.0.1, issuer http://localhost:PORT/
// with the example's trailing slash), USERS_FILE (the example's format),
// REDIRECT_URI (comma-separated), ACCESS_TTL (a Go duration, default the example's 5m),
// ROLES (JSON: user id -> role names).
package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

func main() {
	port := os.Getenv("PORT")
	issuer := "http://localhost:" + port + "/"
	ttl := 5 * time.Minute
	if v := os.Getenv("ACCESS_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fail("ACCESS_TTL", err)
		}
		ttl = d
	}
	roles := map[string][]string{}
	if v := os.Getenv("ROLES"); v != "" {
		if err := json.Unmarshal([]byte(v), &roles); err != nil {
			fail("ROLES", err)
		}
	}
	users, err := storage.StoreFromFile(os.Getenv("USERS_FILE"))
	if err != nil {
		fail("USERS_FILE", err)
	}
	redirects := strings.Split(os.Getenv("REDIRECT_URI"), ",")
	clients := map[string]*storage.Client{
		"web": storage.WebClient("web", "secret", redirects...),
		"jwt": storage.WebClient("jwt", "secret", redirects...),
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s := &store{Storage: storage.NewStorageWithClients(users, clients), ttl: ttl, roles: roles, log: log}
	router := exampleop.SetupServer(issuer, s, log, false)
	srv := &http.Server{Handler: router, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fail("listen", err)
	}
	log.Info("listening", "issuer", issuer) // bound: a test may connect now
	if err := srv.Serve(ln); err != nil {
		fail("serve", err)
	}
}

func fail(what string, err error) {
	slog.Error("zitadelop: "+what, "error", err)
	os.Exit(2)
}

// store is the example's storage with a shorter access-token lifetime,
// JWT access tokens for client "jwt", and the ext.roles claim.
type store struct {
	*storage.Storage
	ttl   time.Duration
	roles map[string][]string
	log   *slog.Logger
}

func (s *store) ext(userID string) (map[string]any, bool) {
	r, ok := s.roles[userID]
	if !ok {
		return nil, false
	}
	return map[string]any{"roles": r}, true
}

type jwtClient struct{ op.Client }

func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }

func (s *store) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err == nil && id == "jwt" {
		c = jwtClient{c}
	}
	return c, err
}

func (s *store) CreateAccessToken(ctx context.Context, r op.TokenRequest) (string, time.Time, error) {
	id, _, err := s.Storage.CreateAccessToken(ctx, r)
	return id, time.Now().Add(s.ttl), err
}

// CreateAccessAndRefreshTokens says when a refresh token is redeemed
// (current is the one given), so that a test can wait for a client's
// refresh instead of for time to pass.
func (s *store) CreateAccessAndRefreshTokens(ctx context.Context, r op.TokenRequest, current string) (string, string, time.Time, error) {
	id, rt, _, err := s.Storage.CreateAccessAndRefreshTokens(ctx, r, current)
	if current != "" && err == nil {
		s.log.Info("refresh token redeemed", "subject", r.GetSubject())
	}
	return id, rt, time.Now().Add(s.ttl), err
}

// SetUserinfoFromRequest fills the id token.
func (s *store) SetUserinfoFromRequest(ctx context.Context, u *oidc.UserInfo, r op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, u, r, scopes); err != nil {
		return err
	}
	if ext, ok := s.ext(r.GetSubject()); ok && r.GetClientID() == "jwt" {
		u.AppendClaims("ext", ext)
	}
	return nil
}

// SetUserinfoFromToken fills the userinfo endpoint's answer.
func (s *store) SetUserinfoFromToken(ctx context.Context, u *oidc.UserInfo, tokenID, subject, origin string) error {
	if err := s.Storage.SetUserinfoFromToken(ctx, u, tokenID, subject, origin); err != nil {
		return err
	}
	if ext, ok := s.ext(u.Subject); ok {
		u.AppendClaims("ext", ext)
	}
	return nil
}

// SetIntrospectionFromToken fills the introspection endpoint's answer.
func (s *store) SetIntrospectionFromToken(ctx context.Context, i *oidc.IntrospectionResponse, tokenID, subject, clientID string) error {
	if err := s.Storage.SetIntrospectionFromToken(ctx, i, tokenID, subject, clientID); err != nil {
		return err
	}
	if ext, ok := s.ext(i.Subject); ok {
		if i.Claims == nil {
			i.Claims = map[string]any{}
		}
		i.Claims["ext"] = ext
	}
	return nil
}

// GetPrivateClaimsFromScopes adds claims to JWT access tokens.
func (s *store) GetPrivateClaimsFromScopes(ctx context.Context, userID, clientID string, scopes []string) (map[string]any, error) {
	c, err := s.Storage.GetPrivateClaimsFromScopes(ctx, userID, clientID, scopes)
	if ext, ok := s.ext(userID); ok && err == nil {
		if c == nil {
			c = map[string]any{}
		}
		c["ext"] = ext
	}
	return c, err
}
