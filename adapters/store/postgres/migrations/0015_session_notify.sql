-- Every agent session created, changed (its mode) or deleted is announced at
-- commit to every instance on the login-session channel (0006), payload
-- "<schema> session:<id>", so that instances keeping the first pages of
-- session lists in memory forget them before the writer is answered (the
-- writer waits for each listener's acknowledgement, as a logout does).
CREATE FUNCTION sessions_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('agentauth_login_sessions', current_schema() || ' session:' || OLD.id);
    ELSE
        PERFORM pg_notify('agentauth_login_sessions', current_schema() || ' session:' || NEW.id);
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER sessions_changed AFTER INSERT OR UPDATE OR DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION sessions_notify();
