-- Audit records v2 (domain.AuditRecord.Seal): the version says how a row's
-- hash was computed. Rows written before keep version 1 and still verify.
-- The client address travels in the JSON body ("client").
ALTER TABLE audit ADD COLUMN version INTEGER NOT NULL DEFAULT 1;

-- Signed checkpoints of the chain head (domain.AuditCheckpoint).
CREATE TABLE audit_checkpoint (
    seq       INTEGER PRIMARY KEY,
    hash      TEXT NOT NULL,
    time      INTEGER NOT NULL,
    prev      TEXT NOT NULL,
    key_id    TEXT NOT NULL,
    signature TEXT NOT NULL
);
