-- The roles the owner held when it created the session (comma-joined, as
-- domain.JoinRoles writes them): an agent token minted for the session by
-- whoever manages it is bounded by them. Empty for older sessions.
ALTER TABLE sessions ADD COLUMN owner_roles TEXT NOT NULL DEFAULT '';
