-- Back-channel logout (OpenID Connect Back-Channel Logout 1.0): each login
-- session keeps the SHA-256 of the provider's session id (sid) so that a
-- logout token naming it ends the session; logout token ids (jti) are kept
-- until the token would no longer be accepted, so a replay is refused; the
-- provider sessions ended this way are kept so that Bearer access tokens of
-- them are refused too.
ALTER TABLE login_sessions ADD COLUMN provider_sid TEXT NOT NULL DEFAULT '';
CREATE INDEX login_sessions_provider_sid ON login_sessions (provider_sid) WHERE provider_sid <> '';
CREATE INDEX login_sessions_subject ON login_sessions (subject);

CREATE TABLE logout_tokens (
    id_hash    TEXT PRIMARY KEY,
    expires_at BIGINT NOT NULL -- Unix nanoseconds
);

CREATE TABLE revoked_provider_sessions (
    sid_hash   TEXT PRIMARY KEY,
    expires_at BIGINT NOT NULL
);
