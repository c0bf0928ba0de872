-- The MCP gateway: a server's MCP endpoint and the name of the credential
-- the gateway presents to it (the secret stays in its file); a tool call
-- decided by the gateway keeps the hash of its arguments (an approval holds
-- for them only) and when its approval was used (once); a tool may require
-- its calls to be approved by someone other than the session's owner.
ALTER TABLE servers ADD COLUMN endpoint TEXT NOT NULL DEFAULT '';
ALTER TABLE servers ADD COLUMN credential TEXT NOT NULL DEFAULT '';
ALTER TABLE tool_calls ADD COLUMN args_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE tool_calls ADD COLUMN used_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tools ADD COLUMN second_approver INTEGER NOT NULL DEFAULT 0;
