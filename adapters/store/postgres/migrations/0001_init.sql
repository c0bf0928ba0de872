-- Same tables as SQLite's 0001, in PostgreSQL types. Times are integers
-- (sessions: Unix nanoseconds, audit: Unix microseconds) so that both stores
-- round-trip exactly the same values.
CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    project    TEXT NOT NULL DEFAULT '',
    title      TEXT NOT NULL DEFAULT '',
    mode       TEXT NOT NULL,
    state      TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX sessions_owner_created ON sessions (owner, created_at DESC);
CREATE INDEX sessions_created ON sessions (created_at DESC);

CREATE TABLE audit (
    seq         BIGINT PRIMARY KEY,
    time        BIGINT NOT NULL,
    request_id  TEXT NOT NULL,
    subject     TEXT NOT NULL,
    roles       TEXT NOT NULL,
    auth_method TEXT NOT NULL,
    method      TEXT NOT NULL,
    path        TEXT NOT NULL,
    decision    TEXT NOT NULL,
    reason      TEXT NOT NULL,
    status      INTEGER NOT NULL,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL
);
CREATE INDEX audit_subject_seq ON audit (subject, seq);
CREATE INDEX audit_time ON audit (time);

-- The chain head: one row, locked FOR UPDATE by every append, so appends
-- from any number of instances are serialized into one unbroken chain.
CREATE TABLE audit_head (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    seq  BIGINT NOT NULL,
    hash TEXT NOT NULL
);
INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

CREATE TABLE settings (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    body TEXT NOT NULL
);
