-- Each person's own credential upstream (issue 32). A server may say how
-- its upstream authorizes each person's calls (upstream_auth, JSON; '' for
-- none: its static credential applies). A person's connection to a server
-- keeps the upstream's tokens sealed (AES-256-GCM, app), never in clear;
-- refreshing_until is the lease of the one instance refreshing it. A
-- connect request waits for its callback under the hash of its state.
-- Times are Unix nanoseconds, 0 for none.
ALTER TABLE servers ADD COLUMN upstream_auth TEXT NOT NULL DEFAULT '';
CREATE TABLE connections (
    id               TEXT NOT NULL UNIQUE,
    subject          TEXT NOT NULL,
    server           TEXT NOT NULL,
    issuer           TEXT NOT NULL,
    client_id        TEXT NOT NULL,
    upstream_subject TEXT NOT NULL,
    scopes           TEXT NOT NULL,
    status           TEXT NOT NULL,
    broken           TEXT NOT NULL,
    access_token     TEXT NOT NULL,
    refresh_token    TEXT NOT NULL,
    expires_at       INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    refreshed_at     INTEGER NOT NULL,
    version          INTEGER NOT NULL,
    refreshing_until INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (subject, server)
);
CREATE INDEX connections_created_id ON connections (created_at, id);
CREATE INDEX connections_subject_created_id ON connections (subject, created_at, id);
CREATE INDEX connections_server ON connections (server);
CREATE TABLE connect_requests (
    state_hash    TEXT PRIMARY KEY,
    subject       TEXT NOT NULL,
    server        TEXT NOT NULL,
    issuer        TEXT NOT NULL,
    client_id     TEXT NOT NULL,
    code_verifier TEXT NOT NULL,
    resource      TEXT NOT NULL,
    return_to     TEXT NOT NULL,
    expires_at    INTEGER NOT NULL
);
