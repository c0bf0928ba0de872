-- Audit queries read newest first from an index whose order is seq within
-- the filter (adapters/store/auditplan): (decision, seq) for a decision,
-- (subject, decision, seq) for a subject, with or without a decision.
-- Time ranges are found by binary search over seq (time never decreases
-- along the chain), so the time index goes: one index less to write.
DROP INDEX IF EXISTS audit_subject_seq;
DROP INDEX IF EXISTS audit_time;
CREATE INDEX audit_subject_decision_seq ON audit (subject, decision, seq);
CREATE INDEX audit_decision_seq ON audit (decision, seq);
