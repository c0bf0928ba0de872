-- Instances keep login sessions in memory after their first use; a session
-- refreshed to a new version or deleted (logout, expiry, refused refresh) is
-- announced to every instance listening, at commit, so that each forgets it.
-- The payload is "<schema> <id_hash>": instances of another schema in the
-- same database ignore it.
CREATE FUNCTION login_sessions_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('agentauth_login_sessions', current_schema() || ' ' || OLD.id_hash);
    RETURN NULL;
END;
$$;
CREATE TRIGGER login_sessions_deleted AFTER DELETE ON login_sessions
    FOR EACH ROW EXECUTE FUNCTION login_sessions_notify();
CREATE TRIGGER login_sessions_refreshed AFTER UPDATE ON login_sessions
    FOR EACH ROW WHEN (OLD.version IS DISTINCT FROM NEW.version) EXECUTE FUNCTION login_sessions_notify();
