-- Lists are paged by keyset, newest first: (created_at, id) < (cursor) in
-- the order created_at DESC, id DESC. These indexes end in (created_at, id),
-- so a page is a range scan of its own rows, ties on created_at included,
-- with no sort, however many rows the table holds. They replace the
-- indexes on created_at alone.
DROP INDEX IF EXISTS sessions_owner_created;
DROP INDEX IF EXISTS sessions_created;
DROP INDEX IF EXISTS sessions_project_created;
CREATE INDEX sessions_created_id ON sessions (created_at, id);
CREATE INDEX sessions_owner_created_id ON sessions (owner, created_at, id);
CREATE INDEX sessions_project_created_id ON sessions (project, created_at, id);

DROP INDEX IF EXISTS tool_calls_session_created;
DROP INDEX IF EXISTS tool_calls_created;
CREATE INDEX tool_calls_created_id ON tool_calls (created_at, id);
CREATE INDEX tool_calls_session_created_id ON tool_calls (session, created_at, id);

DROP INDEX IF EXISTS agents_session;
CREATE INDEX agents_session_created_id ON agents (session, created_at, id);

-- Projects, servers, tools, policies and managed API keys: the same order
-- (servers and tools are keyed by their name).
CREATE INDEX projects_created_id ON projects (created_at, id);
CREATE INDEX servers_created_name ON servers (created_at, name);
CREATE INDEX tools_created_name ON tools (created_at, name);
CREATE INDEX policies_created_id ON policies (created_at, id);
DROP INDEX IF EXISTS api_keys_owner;
CREATE INDEX api_keys_created_id ON api_keys (created_at, id);
CREATE INDEX api_keys_owner_created_id ON api_keys (owner, created_at, id);

-- Service accounts and people page by subject (owners have no creation
-- time; their update time moves).
CREATE INDEX api_key_owners_service_subject ON api_key_owners (service, subject);
