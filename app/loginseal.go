package app

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// sealedSessions seals the provider's tokens of a login session with
// AES-256-GCM before they reach the store, so a copy of the database (or
// of a backup) yields no usable refresh token. The session id hash is the
// additional data: a sealed token moved to another row does not open.
type sealedSessions struct {
	next ports.LoginSessionStore
	aead cipher.AEAD
}

const sealPrefix = "v1."

// errSealed means a stored token could not be opened (the key changed):
// the session is treated as ended.
var errSealed = errors.New("stored session tokens do not open with the current key")

func newSealedSessions(next ports.LoginSessionStore, key []byte) (*sealedSessions, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("login session key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("login session key: %w", err)
	}
	return &sealedSessions{next: next, aead: aead}, nil
}

func (s *sealedSessions) seal(v, idHash string) string {
	if v == "" {
		return ""
	}
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(v)+s.aead.Overhead())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails on supported platforms
	return sealPrefix + base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, []byte(v), []byte(idHash)))
}

func (s *sealedSessions) open(v, idHash string) (string, error) {
	if v == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(v, sealPrefix))
	if !strings.HasPrefix(v, sealPrefix) || err != nil || len(raw) < s.aead.NonceSize() {
		return "", errSealed
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], []byte(idHash))
	if err != nil {
		return "", errSealed
	}
	return string(plain), nil
}

func (s *sealedSessions) sealAll(ls ports.LoginSession) ports.LoginSession {
	t := &ls.Tokens
	t.AccessToken, t.RefreshToken, t.IDToken = s.seal(t.AccessToken, ls.IDHash), s.seal(t.RefreshToken, ls.IDHash), s.seal(t.IDToken, ls.IDHash)
	return ls
}

func (s *sealedSessions) CreateLoginSession(ctx context.Context, ls ports.LoginSession) error {
	return s.next.CreateLoginSession(ctx, s.sealAll(ls))
}

func (s *sealedSessions) GetLoginSession(ctx context.Context, idHash string) (ports.LoginSession, error) {
	ls, err := s.next.GetLoginSession(ctx, idHash)
	if err != nil {
		return ls, err
	}
	t := &ls.Tokens
	var errs [3]error
	t.AccessToken, errs[0] = s.open(t.AccessToken, idHash)
	t.RefreshToken, errs[1] = s.open(t.RefreshToken, idHash)
	t.IDToken, errs[2] = s.open(t.IDToken, idHash)
	if err := errors.Join(errs[:]...); err != nil {
		_ = s.next.DeleteLoginSession(ctx, idHash)
		return ports.LoginSession{}, fmt.Errorf("login session: %w: %w", errSealed, domain.ErrNotFound)
	}
	return ls, nil
}

func (s *sealedSessions) UpdateLoginSession(ctx context.Context, ls ports.LoginSession) error {
	return s.next.UpdateLoginSession(ctx, s.sealAll(ls))
}

func (s *sealedSessions) TouchLoginSession(ctx context.Context, idHash string, t time.Time) error {
	return s.next.TouchLoginSession(ctx, idHash, t)
}

func (s *sealedSessions) DeleteLoginSession(ctx context.Context, idHash string) error {
	return s.next.DeleteLoginSession(ctx, idHash)
}

func (s *sealedSessions) DeleteExpiredLoginSessions(ctx context.Context, now, idleBefore time.Time) (int, error) {
	return s.next.DeleteExpiredLoginSessions(ctx, now, idleBefore)
}

func (s *sealedSessions) DeleteLoginSessionsOf(ctx context.Context, providerSID, subject string) ([]string, error) {
	return s.next.DeleteLoginSessionsOf(ctx, providerSID, subject)
}

func (s *sealedSessions) UseLogoutToken(ctx context.Context, idHash string, until, now time.Time) error {
	return s.next.UseLogoutToken(ctx, idHash, until, now)
}

func (s *sealedSessions) RevokeProviderSession(ctx context.Context, sidHash string, until time.Time) error {
	return s.next.RevokeProviderSession(ctx, sidHash, until)
}

func (s *sealedSessions) ProviderSessionRevoked(ctx context.Context, sidHash string, now time.Time) (bool, error) {
	return s.next.ProviderSessionRevoked(ctx, sidHash, now)
}

func (s *sealedSessions) RevokedProviderSessions(ctx context.Context, now time.Time) ([]string, error) {
	return s.next.RevokedProviderSessions(ctx, now)
}
