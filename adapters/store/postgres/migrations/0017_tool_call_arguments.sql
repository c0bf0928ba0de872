-- A stored tool call keeps its arguments: the RFC 8785 canonical JSON whose
-- SHA-256 is args_hash (what an approval binds to), at most 64 KiB
-- (domain.MaxArgumentsBytes), so that an approver sees exactly what it
-- approves. TEXT, not jsonb: jsonb would store another spelling than the
-- one hashed. '' for calls stored before.
ALTER TABLE tool_calls ADD COLUMN arguments TEXT NOT NULL DEFAULT '';
