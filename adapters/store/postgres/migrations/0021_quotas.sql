-- Limits on the calls a policy rule or a tool admits (domain.Limit): at
-- most limit_calls per window of limit_per seconds, counted by limit_by
-- (person, agent, session). limit_calls 0: no limit.
ALTER TABLE policies ADD COLUMN limit_calls BIGINT NOT NULL DEFAULT 0;
ALTER TABLE policies ADD COLUMN limit_per BIGINT NOT NULL DEFAULT 0;
ALTER TABLE policies ADD COLUMN limit_by TEXT NOT NULL DEFAULT '';
ALTER TABLE tools ADD COLUMN limit_calls BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tools ADD COLUMN limit_per BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tools ADD COLUMN limit_by TEXT NOT NULL DEFAULT '';
-- One counter per rule or tool, window length and whose calls: the calls
-- counted in the window that starts at window_start (Unix nanoseconds)
-- and ends at window_end. A new window starts the count again in place.
CREATE TABLE quota_counters (
    key          TEXT PRIMARY KEY,
    window_start BIGINT NOT NULL,
    window_end   BIGINT NOT NULL,
    calls        BIGINT NOT NULL
);
CREATE INDEX quota_counters_end ON quota_counters (window_end);
