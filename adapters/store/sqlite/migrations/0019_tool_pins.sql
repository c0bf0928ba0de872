-- A tool's definition as its server declared it (name, title, description,
-- input and output schema, annotations; RFC 8785 canonical JSON), pinned
-- at registration or import, with its SHA-256; and the definition the
-- server declared since when it differs (hidden and refused until an ADMIN
-- accepts it). '' for tools not pinned yet.
ALTER TABLE tools ADD COLUMN definition TEXT NOT NULL DEFAULT '';
ALTER TABLE tools ADD COLUMN digest TEXT NOT NULL DEFAULT '';
ALTER TABLE tools ADD COLUMN changed_definition TEXT NOT NULL DEFAULT '';
ALTER TABLE tools ADD COLUMN changed_digest TEXT NOT NULL DEFAULT '';
ALTER TABLE tools ADD COLUMN changed_at INTEGER NOT NULL DEFAULT 0;
-- The digest of the tool's pinned definition when a call was asked for:
-- its approval holds for that definition only.
ALTER TABLE tool_calls ADD COLUMN tool_digest TEXT NOT NULL DEFAULT '';
