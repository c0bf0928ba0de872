-- The transactional outbox of the audit log: every state change writes, in
-- its own transaction, which request made it and what it changed; the
-- request's audit record deletes the row in the transaction that commits the
-- record (under the chain-head lock). A row left behind names a change
-- committed without its record, and recovery appends that record.
CREATE TABLE audit_intents (
    id          BIGSERIAL PRIMARY KEY,
    request_id  TEXT NOT NULL,
    at          BIGINT NOT NULL, -- Unix microseconds, when the change was committed
    subject     TEXT NOT NULL,
    roles       TEXT NOT NULL,
    auth_method TEXT NOT NULL,
    client      TEXT NOT NULL,
    method      TEXT NOT NULL,
    path        TEXT NOT NULL,
    change      TEXT NOT NULL
);
CREATE INDEX audit_intents_request ON audit_intents (request_id);
CREATE INDEX audit_intents_at ON audit_intents (at);
