-- A pending tool call held by the MCP gateway names who waits for its
-- outcome (waiter: a digest of the client's MCP session and request id; ''
-- for a call of the API) and until when (wait_until, Unix nanoseconds; 0:
-- no end). Once nobody waits, the call is withdrawn (status 'withdrawn')
-- and can no longer be approved.
ALTER TABLE tool_calls ADD COLUMN waiter TEXT NOT NULL DEFAULT '';
ALTER TABLE tool_calls ADD COLUMN wait_until BIGINT NOT NULL DEFAULT 0;
CREATE INDEX tool_calls_waiter ON tool_calls (waiter) WHERE waiter <> '';
