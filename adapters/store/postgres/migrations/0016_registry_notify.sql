-- Every change of the settings, a server, a tool or a policy rule is
-- announced at commit to every instance on the login-session channel (0006),
-- payload "<schema> registry:settings", "registry:server:<name>",
-- "registry:tool:<name>" or "registry:policy:<id>", so that instances keeping
-- what tool-call decisions read of them in memory forget it before the writer
-- is answered (the writer waits for each listener's acknowledgement, as a
-- logout does).
CREATE FUNCTION registry_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    what text;
    r record;
BEGIN
    IF TG_OP = 'DELETE' THEN
        r := OLD;
    ELSE
        r := NEW;
    END IF;
    CASE TG_TABLE_NAME
        WHEN 'settings' THEN what := 'settings';
        WHEN 'servers' THEN what := 'server:' || r.name;
        WHEN 'tools' THEN what := 'tool:' || r.name;
        ELSE what := 'policy:' || r.id;
    END CASE;
    PERFORM pg_notify('agentauth_login_sessions', current_schema() || ' registry:' || what);
    RETURN NULL;
END;
$$;
CREATE TRIGGER settings_changed AFTER INSERT OR UPDATE OR DELETE ON settings
    FOR EACH ROW EXECUTE FUNCTION registry_notify();
CREATE TRIGGER servers_changed AFTER INSERT OR UPDATE OR DELETE ON servers
    FOR EACH ROW EXECUTE FUNCTION registry_notify();
CREATE TRIGGER tools_changed AFTER INSERT OR UPDATE OR DELETE ON tools
    FOR EACH ROW EXECUTE FUNCTION registry_notify();
CREATE TRIGGER policies_changed AFTER INSERT OR UPDATE OR DELETE ON policies
    FOR EACH ROW EXECUTE FUNCTION registry_notify();
