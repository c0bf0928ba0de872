-- Audit records v2 (domain.AuditRecord.Seal): the version says how a row's
-- hash was computed. Rows written before keep version 1 and still verify.
ALTER TABLE audit ADD COLUMN version SMALLINT NOT NULL DEFAULT 1;
ALTER TABLE audit ADD COLUMN client TEXT NOT NULL DEFAULT '';

-- Signed checkpoints of the chain head (domain.AuditCheckpoint).
CREATE TABLE audit_checkpoint (
    seq       BIGINT PRIMARY KEY,
    hash      TEXT NOT NULL,
    time      BIGINT NOT NULL,
    prev      TEXT NOT NULL,
    key_id    TEXT NOT NULL,
    signature TEXT NOT NULL
);
