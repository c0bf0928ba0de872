-- Intents are settled by a key the server makes per request (AuditIntent.Key),
-- not by the request id, which a caller may choose (X-Request-ID): a second
-- request reusing an id must not settle the first one's changes.
ALTER TABLE audit_intents ADD COLUMN key TEXT NOT NULL DEFAULT '';
-- Rows from before: one key per request.
UPDATE audit_intents SET key = 'request:' || request_id;
DROP INDEX audit_intents_request;
CREATE INDEX audit_intents_key ON audit_intents (key);
