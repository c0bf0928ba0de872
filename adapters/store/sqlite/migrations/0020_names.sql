-- Names are labels shown beside what they name, never identities: a
-- person's display name as last seen (its provider's preferred_username,
-- name or email; a service account's name), and an agent's name as its
-- maker chose it. '' for none.
ALTER TABLE api_key_owners ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE agents ADD COLUMN name TEXT NOT NULL DEFAULT '';
