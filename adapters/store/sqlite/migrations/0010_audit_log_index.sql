-- The audit log (adapters/auditlog) holds the records; this database keeps
-- only where each one is and what queries filter on, a block at a time:
-- one audit_block row per indexed batch of records (up to 4,096, seqs
-- first_seq..last_seq, each record's time and log position delta-encoded in
-- entries), and per batch one audit_posting row for each filter value it
-- holds (key: the decision, or the decision and the subject; seqs: the
-- matching records' seqs, delta-encoded). A record costs a few bytes and no
-- B-tree insert of its own. audit_index_start is where the kept chain
-- starts after retention. The rows of the old audit table are copied into
-- the log at the next start and removed.
CREATE TABLE audit_block (
    first_seq INTEGER PRIMARY KEY,
    last_seq  INTEGER NOT NULL,
    last_hash TEXT NOT NULL,
    entries   BLOB NOT NULL
);
CREATE TABLE audit_posting (
    key       TEXT NOT NULL,
    first_seq INTEGER NOT NULL,
    seqs      BLOB NOT NULL,
    PRIMARY KEY (key, first_seq)
) WITHOUT ROWID;
CREATE TABLE audit_index_start (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL
);
