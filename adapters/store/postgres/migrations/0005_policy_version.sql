-- A counter that every change to the policy rules moves, in the change's own
-- transaction, so that every instance holding the rules compiled in memory
-- knows with one indexed read whether its copy is current.
CREATE TABLE policy_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version BIGINT NOT NULL
);
INSERT INTO policy_version (id, version) VALUES (1, 1);
CREATE FUNCTION policies_bump_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE policy_version SET version = version + 1 WHERE id = 1;
    RETURN NULL;
END;
$$;
CREATE TRIGGER policies_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON policies
    FOR EACH STATEMENT EXECUTE FUNCTION policies_bump_version();
