-- Audit retention (auditretention.go): the chain kept starts right after
-- record seq, whose hash a signed checkpoint holds. Every record up to seq
-- was removed, or is being removed in batches (a run finishes what an
-- interrupted one left). One row, written before any record is deleted;
-- no row: nothing was ever removed.
CREATE TABLE audit_cut (
    id      SMALLINT PRIMARY KEY CHECK (id = 1),
    seq     BIGINT NOT NULL,
    hash    TEXT NOT NULL,
    at      BIGINT NOT NULL, -- Unix microseconds, when the cut was made
    host    TEXT NOT NULL,   -- the instance that made it
    archive TEXT NOT NULL    -- the archive it wrote in that instance's data dir ('' when dropped)
);
