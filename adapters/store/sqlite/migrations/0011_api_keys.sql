-- Managed API keys (POST /api/v2/keys): the SHA-256 of each key, never the
-- key; lists are JSON arrays. Times are Unix nanoseconds, 0 for none.
CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    owner       TEXT NOT NULL,
    hash        BLOB NOT NULL,
    permissions TEXT NOT NULL,
    projects    TEXT NOT NULL,
    tools       TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    revoked_at  INTEGER NOT NULL DEFAULT 0,
    last_used   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX api_keys_owner ON api_keys (owner, created_at);
-- What a key's use is decided with besides the key: its owner's roles as
-- last seen, and whether its keys are suspended.
CREATE TABLE api_key_owners (
    subject    TEXT PRIMARY KEY,
    roles      TEXT NOT NULL,
    service    INTEGER NOT NULL,
    disabled   INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
