-- The audit log (adapters/auditlog) holds the records; this database keeps
-- only where each one is and which match a filter, a block at a time: one
-- audit_block row per indexed batch of records (up to 32,768, seqs
-- first_seq..last_seq; entries: each record's time and log position,
-- delta-encoded), and per batch one audit_posting row for each filter value
-- it holds (key: the decision, or the decision and the subject; entries:
-- the matching records' seqs and log positions, delta-encoded). A record
-- costs a few bytes and no B-tree insert of its own. audit_block_time turns
-- a time into a block (time never decreases along the chain).
-- audit_index_start is where the kept chain starts after retention. The
-- rows of the old audit table are moved into the log at the next start.
CREATE TABLE audit_block (
    first_seq  INTEGER PRIMARY KEY,
    last_seq   INTEGER NOT NULL,
    first_time INTEGER NOT NULL,
    last_hash  TEXT NOT NULL,
    entries    BLOB NOT NULL
);
CREATE INDEX audit_block_time ON audit_block (first_time);
CREATE TABLE audit_posting (
    key       TEXT NOT NULL,
    first_seq INTEGER NOT NULL,
    entries   BLOB NOT NULL,
    PRIMARY KEY (key, first_seq)
) WITHOUT ROWID;
CREATE TABLE audit_index_start (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL
);
