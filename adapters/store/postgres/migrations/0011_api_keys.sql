-- Managed API keys (POST /api/v2/keys): the SHA-256 of each key, never the
-- key; lists are JSON arrays. Times are Unix nanoseconds, 0 for none.
CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    owner       TEXT NOT NULL,
    hash        BYTEA NOT NULL,
    permissions TEXT NOT NULL,
    projects    TEXT NOT NULL,
    tools       TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    revoked_at  BIGINT NOT NULL DEFAULT 0,
    last_used   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX api_keys_owner ON api_keys (owner, created_at);
-- What a key's use is decided with besides the key: its owner's roles as
-- last seen, and whether its keys are suspended.
CREATE TABLE api_key_owners (
    subject    TEXT PRIMARY KEY,
    roles      TEXT NOT NULL,
    service    BOOLEAN NOT NULL,
    disabled   BOOLEAN NOT NULL,
    updated_at BIGINT NOT NULL
);
-- Instances keep keys and owners in memory after a key's first use; a key
-- revoked or deleted, and an owner written, is announced at commit to every
-- instance on the login-session channel (0006), payload "<schema> key:<id>"
-- or "<schema> owner:<subject>". A use (last_used) is not announced.
CREATE FUNCTION api_keys_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('agentauth_login_sessions', current_schema() || ' key:' || OLD.id);
    RETURN NULL;
END;
$$;
CREATE TRIGGER api_keys_revoked AFTER UPDATE ON api_keys
    FOR EACH ROW WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
        OR OLD.permissions IS DISTINCT FROM NEW.permissions OR OLD.projects IS DISTINCT FROM NEW.projects OR OLD.tools IS DISTINCT FROM NEW.tools)
    EXECUTE FUNCTION api_keys_notify();
CREATE TRIGGER api_keys_deleted AFTER DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION api_keys_notify();
CREATE FUNCTION api_key_owners_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('agentauth_login_sessions', current_schema() || ' owner:' || NEW.subject);
    RETURN NULL;
END;
$$;
CREATE TRIGGER api_key_owners_changed AFTER INSERT OR UPDATE ON api_key_owners
    FOR EACH ROW EXECUTE FUNCTION api_key_owners_notify();
-- The backends listening on the login-session channel, each an instance's
-- watcher: a logout or a key revocation waits until each of those still
-- connected has acknowledged it ("<schema> ack:<pid>:<report>" on the same
-- channel).
CREATE TABLE key_listeners (
    pid   INTEGER PRIMARY KEY,
    since BIGINT NOT NULL
);
