-- A counter that every change to the policy rules moves, in the change's own
-- transaction, so that instances holding the rules compiled in memory know
-- with one indexed read whether their copy is current.
CREATE TABLE policy_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
INSERT INTO policy_version (id, version) VALUES (1, 1);
CREATE TRIGGER policies_insert_version AFTER INSERT ON policies
BEGIN UPDATE policy_version SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER policies_update_version AFTER UPDATE ON policies
BEGIN UPDATE policy_version SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER policies_delete_version AFTER DELETE ON policies
BEGIN UPDATE policy_version SET version = version + 1 WHERE id = 1; END;
