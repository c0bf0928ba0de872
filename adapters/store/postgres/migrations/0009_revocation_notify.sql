-- Instances keep the provider sessions ended by a back-channel logout in
-- memory, so that a Bearer token is checked without a read; a revocation is
-- announced to every instance listening, at commit, on the login-session
-- channel with the payload "<schema> sid:<sid_hash>".
CREATE FUNCTION revoked_provider_sessions_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('agentauth_login_sessions', current_schema() || ' sid:' || NEW.sid_hash);
    RETURN NULL;
END;
$$;
CREATE TRIGGER revoked_provider_sessions_changed AFTER INSERT OR UPDATE ON revoked_provider_sessions
    FOR EACH ROW EXECUTE FUNCTION revoked_provider_sessions_notify();
