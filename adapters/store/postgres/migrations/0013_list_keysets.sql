-- Lists are paged by keyset, newest first: (created_at, id) < (cursor) in
-- the order created_at DESC, id DESC. These indexes end in (created_at, id),
-- so a page is a range scan of its own rows, ties on created_at included,
-- with no sort, however many rows the table holds. They replace the
-- indexes on created_at alone. IDs compare byte-wise (COLLATE "C"), as in
-- SQLite, so both stores break ties alike.
DROP INDEX IF EXISTS sessions_owner_created;
DROP INDEX IF EXISTS sessions_created;
DROP INDEX IF EXISTS sessions_project_created;
CREATE INDEX sessions_created_id ON sessions (created_at, id COLLATE "C");
CREATE INDEX sessions_owner_created_id ON sessions (owner, created_at, id COLLATE "C");
CREATE INDEX sessions_project_created_id ON sessions (project, created_at, id COLLATE "C");

DROP INDEX IF EXISTS tool_calls_session_created;
DROP INDEX IF EXISTS tool_calls_created;
CREATE INDEX tool_calls_created_id ON tool_calls (created_at, id COLLATE "C");
CREATE INDEX tool_calls_session_created_id ON tool_calls (session, created_at, id COLLATE "C");

DROP INDEX IF EXISTS agents_session;
CREATE INDEX agents_session_created_id ON agents (session, created_at, id COLLATE "C");
