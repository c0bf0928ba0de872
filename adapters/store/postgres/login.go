package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// The login ports live here rather than in process memory so that every
// instance sees the same sessions: a cookie issued by one instance works on
// all, and a logout on one is refused by all from the next request on.
var (
	_ ports.LoginSessionStore = (*Store)(nil)
	_ ports.AuthRequestStore  = (*Store)(nil)
	_ ports.LoginThrottle     = (*Store)(nil)
)

// nanos stores the zero time as 0, the column's "unknown".
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// CreateLoginSession inserts ls; an existing id is a domain.ErrConflict.
func (s *Store) CreateLoginSession(ctx context.Context, ls ports.LoginSession) error {
	roles, err := json.Marshal(ls.Tokens.Roles)
	if err != nil {
		return fmt.Errorf("postgres: encode roles: %w", err)
	}
	t := ls.Tokens
	return s.exec(ctx, domain.LoginChange("start", ls.IDHash, t.Subject), "login session already exists", `INSERT INTO login_sessions
		(id_hash, version, subject, username, roles, access_token, refresh_token, id_token, access_expiry, refresh_expiry, created_at, last_seen, expires_at, provider_sid)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		ls.IDHash, ls.Version, t.Subject, t.Username, string(roles), t.AccessToken, t.RefreshToken, t.IDToken,
		nanos(t.AccessExpiry), nanos(t.RefreshExpiry), nanos(ls.CreatedAt), nanos(ls.LastSeen), nanos(ls.ExpiresAt), ls.ProviderSID)
}

// GetLoginSession reads one session.
func (s *Store) GetLoginSession(ctx context.Context, idHash string) (ports.LoginSession, error) {
	var (
		ls                                                    ports.LoginSession
		roles                                                 string
		accessExp, refreshExp, createdAt, lastSeen, expiresAt int64
	)
	err := s.pool.QueryRow(ctx, `SELECT id_hash, version, subject, username, roles, access_token, refresh_token, id_token,
		access_expiry, refresh_expiry, created_at, last_seen, expires_at, provider_sid FROM login_sessions WHERE id_hash = $1`, idHash).
		Scan(&ls.IDHash, &ls.Version, &ls.Tokens.Subject, &ls.Tokens.Username, &roles, &ls.Tokens.AccessToken,
			&ls.Tokens.RefreshToken, &ls.Tokens.IDToken, &accessExp, &refreshExp, &createdAt, &lastSeen, &expiresAt, &ls.ProviderSID)
	if errors.Is(err, pgx.ErrNoRows) {
		return ports.LoginSession{}, fmt.Errorf("login session: %w", domain.ErrNotFound)
	}
	if err != nil {
		return ports.LoginSession{}, storeErr("read login session", err)
	}
	if err := json.Unmarshal([]byte(roles), &ls.Tokens.Roles); err != nil {
		return ports.LoginSession{}, fmt.Errorf("postgres: decode roles of login session: %w", err)
	}
	ls.Tokens.AccessExpiry, ls.Tokens.RefreshExpiry = fromNanos(accessExp), fromNanos(refreshExp)
	ls.CreatedAt, ls.LastSeen, ls.ExpiresAt = fromNanos(createdAt), fromNanos(lastSeen), fromNanos(expiresAt)
	return ls, nil
}

// UpdateLoginSession replaces the session if its stored version is
// ls.Version-1. Two instances refreshing at once: the second UPDATE waits
// for the first's row lock, then finds the version moved and matches no row.
func (s *Store) UpdateLoginSession(ctx context.Context, ls ports.LoginSession) error {
	roles, err := json.Marshal(ls.Tokens.Roles)
	if err != nil {
		return fmt.Errorf("postgres: encode roles: %w", err)
	}
	t := ls.Tokens
	err = s.execOne(ctx, domain.LoginChange("refresh", ls.IDHash, t.Subject), "login session", `UPDATE login_sessions SET version = $1, subject = $2, username = $3, roles = $4,
		access_token = $5, refresh_token = $6, id_token = $7, access_expiry = $8, refresh_expiry = $9, last_seen = $10, expires_at = $11
		WHERE id_hash = $12 AND version = $13`,
		ls.Version, t.Subject, t.Username, string(roles), t.AccessToken, t.RefreshToken, t.IDToken,
		nanos(t.AccessExpiry), nanos(t.RefreshExpiry), nanos(ls.LastSeen), nanos(ls.ExpiresAt), ls.IDHash, ls.Version-1)
	if !errors.Is(err, domain.ErrNotFound) {
		return err
	}
	if _, err := s.GetLoginSession(ctx, ls.IDHash); err != nil {
		return err
	}
	return fmt.Errorf("login session was updated by another request: %w", domain.ErrConflict)
}

// TouchLoginSession records use at t (never moving last_seen backwards).
func (s *Store) TouchLoginSession(ctx context.Context, idHash string, t time.Time) error {
	return s.execOne(ctx, domain.LoginChange("mark used", idHash, ""), "login session", `UPDATE login_sessions SET last_seen = GREATEST(last_seen, $1) WHERE id_hash = $2`, nanos(t), idHash)
}

// DeleteLoginSession removes one session.
func (s *Store) DeleteLoginSession(ctx context.Context, idHash string) error {
	return s.execOne(ctx, domain.LoginChange("end", idHash, ""), "login session", `DELETE FROM login_sessions WHERE id_hash = $1`, idHash)
}

// DeleteExpiredLoginSessions removes sessions past their absolute end or
// idle since before idleBefore, and expired login requests. Any instance may
// run it; running it on several at once only deletes the same rows. It makes
// no audit intent (see docs/audit.md, "No change without its record"): no request
// makes it, and it removes only what is refused already.
func (s *Store) DeleteExpiredLoginSessions(ctx context.Context, now, idleBefore time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM login_sessions WHERE expires_at <= $1 OR last_seen < $2`, nanos(now), nanos(idleBefore))
	if err != nil {
		return 0, storeErr("delete expired login sessions", err)
	}
	for _, q := range []string{
		`DELETE FROM login_requests WHERE expires_at <= $1`,
		`DELETE FROM logout_tokens WHERE expires_at <= $1`,
		`DELETE FROM revoked_provider_sessions WHERE expires_at <= $1`,
	} {
		if _, err := s.pool.Exec(ctx, q, nanos(now)); err != nil {
			return 0, storeErr("delete expired login records", err)
		}
	}
	return int(tag.RowsAffected()), nil
}

// PutAuthRequest stores a pending code-flow request.
func (s *Store) PutAuthRequest(ctx context.Context, r ports.PendingAuthRequest) error {
	return s.exec(ctx, domain.LoginChange("begin code-flow login", r.StateHash, ""), "login request already exists",
		`INSERT INTO login_requests (state_hash, nonce, code_verifier, return_to, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		r.StateHash, r.Request.Nonce, r.Request.CodeVerifier, r.ReturnTo, nanos(r.ExpiresAt))
}

// TakeAuthRequest deletes and returns a pending request in one statement,
// so two callbacks with the same state (on any instances) cannot both get it.
func (s *Store) TakeAuthRequest(ctx context.Context, stateHash string, now time.Time) (ports.PendingAuthRequest, error) {
	r := ports.PendingAuthRequest{StateHash: stateHash}
	var exp int64
	err := s.change(ctx, domain.LoginChange("take code-flow login", stateHash, ""), func(ctx context.Context, tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `DELETE FROM login_requests WHERE state_hash = $1 RETURNING nonce, code_verifier, return_to, expires_at`, stateHash).
			Scan(&r.Request.Nonce, &r.Request.CodeVerifier, &r.ReturnTo, &exp)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("login request: %w", domain.ErrNotFound)
		}
		if err != nil {
			return storeErr("take login request", err)
		}
		return nil
	})
	if err != nil {
		return ports.PendingAuthRequest{}, err
	}
	r.ExpiresAt = fromNanos(exp)
	if !now.Before(r.ExpiresAt) {
		return ports.PendingAuthRequest{}, fmt.Errorf("login request expired: %w", domain.ErrNotFound)
	}
	return r, nil
}

// loginThrottleLock is the transaction advisory lock that makes counting
// and recording an attempt one step across every instance.
const loginThrottleLock = 0x6167_6e74_6c67_6e01

// ReserveLoginAttempt counts and records under one advisory lock, so two
// instances never both see room for the last attempt.
func (s *Store) ReserveLoginAttempt(ctx context.Context, limits []ports.LoginLimit, t, since time.Time) (ports.LoginReservation, error) {
	res := ports.LoginReservation{OK: true}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		res = ports.LoginReservation{OK: true}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(loginThrottleLock)); err != nil {
			return err
		}
		// Keys are caller-chosen usernames: one never tried again must not
		// keep its rows forever, so every old row goes.
		if _, err := tx.Exec(ctx, `DELETE FROM login_failures WHERE at < $1`, nanos(since)); err != nil {
			return err
		}
		for _, l := range limits {
			var n int
			var oldest *int64
			if err := tx.QueryRow(ctx, `SELECT count(*), min(at) FROM login_failures WHERE key = $1 AND at >= $2`, l.Key, nanos(since)).Scan(&n, &oldest); err != nil {
				return err
			}
			if n >= l.Limit {
				res = ports.LoginReservation{}
				if oldest != nil {
					res.Oldest = fromNanos(*oldest)
				}
				return nil
			}
		}
		for _, l := range limits {
			if _, err := tx.Exec(ctx, `INSERT INTO login_failures (key, at) VALUES ($1, $2)`, l.Key, nanos(t)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return ports.LoginReservation{}, storeErr("reserve login attempt", err)
	}
	return res, nil
}

// ReleaseLoginAttempt removes one attempt at t per key.
func (s *Store) ReleaseLoginAttempt(ctx context.Context, keys []string, t time.Time) error {
	for _, k := range keys {
		if _, err := s.pool.Exec(ctx, `DELETE FROM login_failures WHERE ctid IN (SELECT ctid FROM login_failures WHERE key = $1 AND at = $2 LIMIT 1)`, k, nanos(t)); err != nil {
			return storeErr("release login attempt", err)
		}
	}
	return nil
}

// ClearLoginFailures forgets the key's failures.
func (s *Store) ClearLoginFailures(ctx context.Context, key string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM login_failures WHERE key = $1`, key); err != nil {
		return storeErr("clear login failures", err)
	}
	return nil
}

// LatestLoginSessionOf returns the id hash of subject's session last seen.
func (s *Store) LatestLoginSessionOf(ctx context.Context, subject string) (string, error) {
	var hash string
	err := s.pool.QueryRow(ctx, `SELECT id_hash FROM login_sessions WHERE subject = $1 ORDER BY last_seen DESC, id_hash LIMIT 1`, text(subject)).Scan(&hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("login session of %s: %w", subject, domain.ErrNotFound)
	}
	if err != nil {
		return "", storeErr("read login sessions", err)
	}
	return hash, nil
}

// DeleteLoginSessionsOf removes the sessions of a provider session, or of
// a subject when providerSID is empty. Each deleted row notifies every
// instance (0006_login_notify.sql), which forgets it from memory.
func (s *Store) DeleteLoginSessionsOf(ctx context.Context, providerSID, subject string) ([]string, error) {
	q, arg, what := `DELETE FROM login_sessions WHERE provider_sid = $1 AND provider_sid <> '' RETURNING id_hash`, providerSID,
		"end the login sessions of provider session "+providerSID[:min(len(providerSID), 12)]
	if providerSID == "" {
		q, arg, what = `DELETE FROM login_sessions WHERE subject = $1 RETURNING id_hash`, subject, "end the login sessions of "+subject
	}
	var out []string
	err := s.change(ctx, what, func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, q, arg)
		if err != nil {
			return storeErr(what, err)
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return storeErr(what, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UseLogoutToken inserts the id, or takes over an expired record of it, in
// one statement: of two concurrent uses on any instances only one changes
// a row.
func (s *Store) UseLogoutToken(ctx context.Context, idHash string, until, now time.Time) error {
	what := "accept logout token " + idHash[:min(len(idHash), 12)]
	return s.change(ctx, what, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO logout_tokens (id_hash, expires_at) VALUES ($1, $2)
			ON CONFLICT (id_hash) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE logout_tokens.expires_at <= $3`,
			idHash, nanos(until), nanos(now))
		if err != nil {
			return storeErr(what, err)
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("logout token already used: %w", domain.ErrConflict)
		}
		return nil
	})
}

// RevokeProviderSession records the revocation, keeping the later end.
func (s *Store) RevokeProviderSession(ctx context.Context, sidHash string, until time.Time) error {
	return s.exec(ctx, "revoke provider session "+sidHash[:min(len(sidHash), 12)], "provider session already revoked",
		`INSERT INTO revoked_provider_sessions (sid_hash, expires_at) VALUES ($1, $2)
		ON CONFLICT (sid_hash) DO UPDATE SET expires_at = GREATEST(revoked_provider_sessions.expires_at, EXCLUDED.expires_at)`, sidHash, nanos(until))
}

// RevokedProviderSessions lists the revocations not expired at now.
func (s *Store) RevokedProviderSessions(ctx context.Context, now time.Time) ([]string, error) {
	rows, _ := s.pool.Query(ctx, `SELECT sid_hash FROM revoked_provider_sessions WHERE expires_at > $1`, nanos(now))
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, storeErr("list provider session revocations", err)
	}
	return out, nil
}

// ProviderSessionRevoked reads the revocation of sidHash.
func (s *Store) ProviderSessionRevoked(ctx context.Context, sidHash string, now time.Time) (bool, error) {
	var revoked bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM revoked_provider_sessions WHERE sid_hash = $1 AND expires_at > $2)`, sidHash, nanos(now)).Scan(&revoked)
	if err != nil {
		return false, storeErr("read provider session revocation", err)
	}
	return revoked, nil
}
