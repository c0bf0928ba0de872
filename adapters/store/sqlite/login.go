package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

var (
	_ ports.LoginSessionStore = (*Store)(nil)
	_ ports.AuthRequestStore  = (*Store)(nil)
	_ ports.LoginThrottle     = (*Store)(nil)
)

// nanos stores a time as Unix nanoseconds; the zero time is stored as 0,
// the columns' "unknown".
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

// CreateLoginSession inserts s.
func (s *Store) CreateLoginSession(ctx context.Context, ls ports.LoginSession) error {
	roles, err := json.Marshal(ls.Tokens.Roles)
	if err != nil {
		return fmt.Errorf("sqlite: encode roles: %w", err)
	}
	t := ls.Tokens
	return s.exec(ctx, domain.LoginChange("start", ls.IDHash, t.Subject), "login session already exists", `INSERT INTO login_sessions
		(id_hash, version, subject, username, roles, access_token, refresh_token, id_token, access_expiry, refresh_expiry, created_at, last_seen, expires_at, provider_sid)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
	err := s.queryRow(ctx, `SELECT id_hash, version, subject, username, roles, access_token, refresh_token, id_token,
		access_expiry, refresh_expiry, created_at, last_seen, expires_at, provider_sid FROM login_sessions WHERE id_hash = ?`, idHash).
		Scan(&ls.IDHash, &ls.Version, &ls.Tokens.Subject, &ls.Tokens.Username, &roles, &ls.Tokens.AccessToken,
			&ls.Tokens.RefreshToken, &ls.Tokens.IDToken, &accessExp, &refreshExp, &createdAt, &lastSeen, &expiresAt, &ls.ProviderSID)
	if errors.Is(err, sql.ErrNoRows) {
		return ports.LoginSession{}, fmt.Errorf("login session: %w", domain.ErrNotFound)
	}
	if err != nil {
		return ports.LoginSession{}, fmt.Errorf("sqlite: read login session: %w", err)
	}
	if err := json.Unmarshal([]byte(roles), &ls.Tokens.Roles); err != nil {
		return ports.LoginSession{}, fmt.Errorf("sqlite: decode roles of login session: %w", err)
	}
	ls.Tokens.AccessExpiry, ls.Tokens.RefreshExpiry = fromNanos(accessExp), fromNanos(refreshExp)
	ls.CreatedAt, ls.LastSeen, ls.ExpiresAt = fromNanos(createdAt), fromNanos(lastSeen), fromNanos(expiresAt)
	return ls, nil
}

// UpdateLoginSession replaces the session if its stored version is
// ls.Version-1.
func (s *Store) UpdateLoginSession(ctx context.Context, ls ports.LoginSession) error {
	roles, err := json.Marshal(ls.Tokens.Roles)
	if err != nil {
		return fmt.Errorf("sqlite: encode roles: %w", err)
	}
	t := ls.Tokens
	err = s.execOne(ctx, domain.LoginChange("refresh", ls.IDHash, t.Subject), "login session", `UPDATE login_sessions SET version = ?, subject = ?, username = ?, roles = ?,
		access_token = ?, refresh_token = ?, id_token = ?, access_expiry = ?, refresh_expiry = ?, last_seen = ?, expires_at = ?
		WHERE id_hash = ? AND version = ?`,
		ls.Version, t.Subject, t.Username, string(roles), t.AccessToken, t.RefreshToken, t.IDToken,
		nanos(t.AccessExpiry), nanos(t.RefreshExpiry), nanos(ls.LastSeen), nanos(ls.ExpiresAt), ls.IDHash, ls.Version-1)
	if err == nil {
		s.announce(ls.IDHash)
	}
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
	return s.execOne(ctx, domain.LoginChange("mark used", idHash, ""), "login session", `UPDATE login_sessions SET last_seen = max(last_seen, ?) WHERE id_hash = ?`, nanos(t), idHash)
}

// DeleteLoginSession removes one session.
func (s *Store) DeleteLoginSession(ctx context.Context, idHash string) error {
	err := s.execOne(ctx, domain.LoginChange("end", idHash, ""), "login session", `DELETE FROM login_sessions WHERE id_hash = ?`, idHash)
	if err == nil {
		s.announce(idHash)
	}
	return err
}

// DeleteExpiredLoginSessions removes sessions past their absolute end or
// idle since before idleBefore, and expired login requests. It makes no
// audit intent (see docs/audit.md, "No change without its record"): no request
// makes it, and it removes only what is refused already.
func (s *Store) DeleteExpiredLoginSessions(ctx context.Context, now, idleBefore time.Time) (int, error) {
	res, err := s.write.ExecContext(ctx, `DELETE FROM login_sessions WHERE expires_at <= ? OR last_seen < ?`, nanos(now), nanos(idleBefore))
	if err != nil {
		return 0, fmt.Errorf("sqlite: delete expired login sessions: %w", err)
	}
	for _, q := range []string{
		`DELETE FROM login_requests WHERE expires_at <= ?`,
		`DELETE FROM logout_tokens WHERE expires_at <= ?`,
		`DELETE FROM revoked_provider_sessions WHERE expires_at <= ?`,
	} {
		if _, err := s.write.ExecContext(ctx, q, nanos(now)); err != nil {
			return 0, fmt.Errorf("sqlite: delete expired login records: %w", err)
		}
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// PutAuthRequest stores a pending code-flow request.
func (s *Store) PutAuthRequest(ctx context.Context, r ports.PendingAuthRequest) error {
	return s.exec(ctx, domain.LoginChange("begin code-flow login", r.StateHash, ""), "login request already exists",
		`INSERT INTO login_requests (state_hash, nonce, code_verifier, return_to, expires_at) VALUES (?, ?, ?, ?, ?)`,
		r.StateHash, r.Request.Nonce, r.Request.CodeVerifier, r.ReturnTo, nanos(r.ExpiresAt))
}

// TakeAuthRequest deletes and returns a pending request, in one statement
// so that two callbacks with the same state cannot both get it.
func (s *Store) TakeAuthRequest(ctx context.Context, stateHash string, now time.Time) (ports.PendingAuthRequest, error) {
	r := ports.PendingAuthRequest{StateHash: stateHash}
	var exp int64
	err := s.change(ctx, domain.LoginChange("take code-flow login", stateHash, ""), func(ctx context.Context, tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `DELETE FROM login_requests WHERE state_hash = ? RETURNING nonce, code_verifier, return_to, expires_at`, stateHash).
			Scan(&r.Request.Nonce, &r.Request.CodeVerifier, &r.ReturnTo, &exp)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("login request: %w", domain.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("sqlite: take login request: %w", err)
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

// ReserveLoginAttempt counts and records in one write transaction; the
// store's single writer connection serialises them, and every handle on
// the file waits for the database lock.
func (s *Store) ReserveLoginAttempt(ctx context.Context, limits []ports.LoginLimit, t, since time.Time) (ports.LoginReservation, error) {
	res, err := s.reserveLoginAttempt(ctx, limits, t, since)
	return res, unavailable(err)
}

func (s *Store) reserveLoginAttempt(ctx context.Context, limits []ports.LoginLimit, t, since time.Time) (ports.LoginReservation, error) {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return ports.LoginReservation{}, fmt.Errorf("sqlite: reserve login attempt: %w", err)
	}
	defer tx.Rollback()
	// Keys are caller-chosen usernames: one never tried again must not
	// keep its rows forever, so every old row goes.
	if _, err := tx.ExecContext(ctx, `DELETE FROM login_failures WHERE at < ?`, nanos(since)); err != nil {
		return ports.LoginReservation{}, fmt.Errorf("sqlite: reserve login attempt: %w", err)
	}
	res := ports.LoginReservation{OK: true}
	for _, l := range limits {
		var n int
		var oldest sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT count(*), min(at) FROM login_failures WHERE key = ? AND at >= ?`, l.Key, nanos(since)).Scan(&n, &oldest); err != nil {
			return ports.LoginReservation{}, fmt.Errorf("sqlite: reserve login attempt: %w", err)
		}
		if n >= l.Limit {
			res = ports.LoginReservation{Oldest: fromNanos(oldest.Int64)}
			break
		}
	}
	for _, l := range limits {
		if !res.OK {
			break
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO login_failures (key, at) VALUES (?, ?)`, l.Key, nanos(t)); err != nil {
			return ports.LoginReservation{}, fmt.Errorf("sqlite: reserve login attempt: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return ports.LoginReservation{}, fmt.Errorf("sqlite: reserve login attempt: %w", err)
	}
	return res, nil
}

// ReleaseLoginAttempt removes one attempt at t per key.
func (s *Store) ReleaseLoginAttempt(ctx context.Context, keys []string, t time.Time) error {
	for _, k := range keys {
		if _, err := s.write.ExecContext(ctx, `DELETE FROM login_failures WHERE rowid IN (SELECT rowid FROM login_failures WHERE key = ? AND at = ? LIMIT 1)`, k, nanos(t)); err != nil {
			return fmt.Errorf("sqlite: release login attempt: %w", err)
		}
	}
	return nil
}

// ClearLoginFailures forgets the key's failures.
func (s *Store) ClearLoginFailures(ctx context.Context, key string) error {
	if _, err := s.write.ExecContext(ctx, `DELETE FROM login_failures WHERE key = ?`, key); err != nil {
		return fmt.Errorf("sqlite: clear login failures: %w", err)
	}
	return nil
}

// WatchLoginSessions reports the sessions this store changes or ends, once
// committed: in SQLite mode one process owns the database, so these are
// every change there is, as PostgreSQL's notifications are in a cluster.
func (s *Store) WatchLoginSessions(ctx context.Context, changed func(idHash string), live func(bool)) {
	s.loginChanged.Store(&changed)
	live(true)
	<-ctx.Done()
	live(false)
	s.loginChanged.Store(nil)
}

// announce reports a committed change (a login session's id hash, a
// revoked provider session, a key or an owner) to the watcher, if one
// listens, then its acknowledgement: the watcher's callback has acted on
// the change when it returns.
func (s *Store) announce(report string) {
	if f := s.loginChanged.Load(); f != nil {
		(*f)(report)
		(*f)(ports.Ack(localListener, report))
	}
}

// announced announces report once a change committed (err is nil), and
// returns err.
func (s *Store) announced(report string, err error) error {
	if err == nil {
		s.announce(report)
	}
	return err
}

// localListener names this process's one watcher.
const localListener = "local"

// Listeners is this process's watcher, when one listens: in SQLite mode one
// process owns the database.
func (s *Store) Listeners(context.Context) ([]string, error) {
	if s.loginChanged.Load() == nil {
		return nil, nil
	}
	return []string{localListener}, nil
}

// LatestLoginSessionOf returns the id hash of subject's session last seen.
func (s *Store) LatestLoginSessionOf(ctx context.Context, subject string) (string, error) {
	var hash string
	err := s.queryRow(ctx, `SELECT id_hash FROM login_sessions WHERE subject = ? ORDER BY last_seen DESC, id_hash LIMIT 1`, subject).Scan(&hash)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("login session of %s: %w", subject, domain.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("sqlite: read login sessions: %w", err)
	}
	return hash, nil
}

// DeleteLoginSessionsOf removes the sessions of a provider session, or of
// a subject when providerSID is empty.
func (s *Store) DeleteLoginSessionsOf(ctx context.Context, providerSID, subject string) ([]string, error) {
	q, arg, what := `DELETE FROM login_sessions WHERE provider_sid = ? AND provider_sid <> '' RETURNING id_hash`, providerSID,
		"end the login sessions of provider session "+providerSID[:min(len(providerSID), 12)]
	if providerSID == "" {
		q, arg, what = `DELETE FROM login_sessions WHERE subject = ? RETURNING id_hash`, subject, "end the login sessions of "+subject
	}
	var out []string
	err := s.change(ctx, what, func(ctx context.Context, tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q, arg)
		if err != nil {
			return fmt.Errorf("sqlite: %s: %w", what, err)
		}
		defer rows.Close()
		for rows.Next() {
			var h string
			if err := rows.Scan(&h); err != nil {
				return fmt.Errorf("sqlite: %s: %w", what, err)
			}
			out = append(out, h)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlite: %s: %w", what, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, h := range out {
		s.announce(h)
	}
	return out, nil
}

// UseLogoutToken inserts the id, or takes over an expired record of it, in
// one statement: of two concurrent uses only one changes a row.
func (s *Store) UseLogoutToken(ctx context.Context, idHash string, until, now time.Time) error {
	what := "accept logout token " + idHash[:min(len(idHash), 12)]
	return s.change(ctx, what, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO logout_tokens (id_hash, expires_at) VALUES (?, ?)
			ON CONFLICT (id_hash) DO UPDATE SET expires_at = excluded.expires_at WHERE logout_tokens.expires_at <= ?`,
			idHash, nanos(until), nanos(now))
		if err != nil {
			return fmt.Errorf("sqlite: %s: %w", what, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("logout token already used: %w", domain.ErrConflict)
		}
		return nil
	})
}

// RevokeProviderSession records the revocation, keeping the later end.
func (s *Store) RevokeProviderSession(ctx context.Context, sidHash string, until time.Time) error {
	err := s.exec(ctx, "revoke provider session "+sidHash[:min(len(sidHash), 12)], "provider session already revoked",
		`INSERT INTO revoked_provider_sessions (sid_hash, expires_at) VALUES (?, ?)
		ON CONFLICT (sid_hash) DO UPDATE SET expires_at = max(expires_at, excluded.expires_at)`, sidHash, nanos(until))
	if err == nil {
		s.announce(ports.RevokedSessionKey(sidHash))
	}
	return err
}

// RevokedProviderSessions lists the revocations not expired at now.
func (s *Store) RevokedProviderSessions(ctx context.Context, now time.Time) ([]string, error) {
	rows, err := s.queryRows(ctx, `SELECT sid_hash FROM revoked_provider_sessions WHERE expires_at > ?`, nanos(now))
	if err != nil {
		return nil, fmt.Errorf("sqlite: list provider session revocations: %w", err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return nil, fmt.Errorf("sqlite: list provider session revocations: %w", err)
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// ProviderSessionRevoked reads the revocation of sidHash.
func (s *Store) ProviderSessionRevoked(ctx context.Context, sidHash string, now time.Time) (bool, error) {
	var n int
	err := s.queryRow(ctx, `SELECT count(*) FROM revoked_provider_sessions WHERE sid_hash = ? AND expires_at > ?`, sidHash, nanos(now)).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("sqlite: read provider session revocation: %w", err)
	}
	return n > 0, nil
}
