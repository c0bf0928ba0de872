package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// sealedSessions seals the provider's tokens of a login session (see
// sealer) before they reach the store, so a copy of the database (or of a
// backup) yields no usable refresh token. The session id hash is the
// additional data: a sealed token moved to another row does not open.
type sealedSessions struct {
	next ports.LoginSessionStore
	*sealer
}

func newSealedSessions(next ports.LoginSessionStore, key []byte) (*sealedSessions, error) {
	s, err := newSealer("login session key", key)
	if err != nil {
		return nil, err
	}
	return &sealedSessions{next: next, sealer: s}, nil
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
	t.AccessToken, _, errs[0] = s.open(t.AccessToken, idHash)
	t.RefreshToken, _, errs[1] = s.open(t.RefreshToken, idHash)
	t.IDToken, _, errs[2] = s.open(t.IDToken, idHash)
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

func (s *sealedSessions) LatestLoginSessionOf(ctx context.Context, subject string) (string, error) {
	return s.next.LatestLoginSessionOf(ctx, subject)
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
