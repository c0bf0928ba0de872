-- Servers and tools can be changed and removed, except while a call of
-- theirs waits for approval: the pending calls by tool, for that check. A
-- tool keeps its description, shown to whoever approves its calls.
ALTER TABLE tools ADD COLUMN description TEXT NOT NULL DEFAULT '';
CREATE INDEX tool_calls_pending_tool ON tool_calls (lower(tool)) WHERE status = 'pending';
