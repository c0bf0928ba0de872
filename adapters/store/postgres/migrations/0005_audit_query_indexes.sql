-- The same audit query indexes as SQLite (adapters/store/auditplan): rows
-- are read newest first from (decision, seq) or (subject, decision, seq);
-- time ranges are found by binary search over seq (time never decreases
-- along the chain), so the time index goes.
DROP INDEX IF EXISTS audit_subject_seq;
DROP INDEX IF EXISTS audit_time;
CREATE INDEX audit_subject_decision_seq ON audit (subject, decision, seq);
CREATE INDEX audit_decision_seq ON audit (decision, seq);
