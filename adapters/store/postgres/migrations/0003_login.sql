-- OIDC login sessions (user_session cookie), pending code-flow requests and
-- failed password logins. Cookie values and states are stored only as their
-- SHA-256, so a copy of the database yields no working cookie.
CREATE TABLE login_sessions (
    id_hash        TEXT PRIMARY KEY,
    version        BIGINT NOT NULL,
    subject        TEXT NOT NULL,
    username       TEXT NOT NULL,
    roles          TEXT NOT NULL, -- JSON of domain.RoleExtraction
    access_token   TEXT NOT NULL,
    refresh_token  TEXT NOT NULL,
    id_token       TEXT NOT NULL,
    access_expiry  BIGINT NOT NULL, -- Unix nanoseconds
    refresh_expiry BIGINT NOT NULL, -- 0: unknown
    created_at     BIGINT NOT NULL,
    last_seen      BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL
);
CREATE INDEX login_sessions_expires_at ON login_sessions (expires_at);
CREATE INDEX login_sessions_last_seen ON login_sessions (last_seen);

CREATE TABLE login_requests (
    state_hash    TEXT PRIMARY KEY,
    nonce         TEXT NOT NULL,
    code_verifier TEXT NOT NULL,
    return_to     TEXT NOT NULL,
    expires_at    BIGINT NOT NULL
);

CREATE TABLE login_failures (
    key TEXT NOT NULL,
    at  BIGINT NOT NULL
);
CREATE INDEX login_failures_key_at ON login_failures (key, at);
