package postgres

import (
	"context"
	"time"
)

// PinTool pins the definition of a tool not pinned yet.
func (s *Store) PinTool(ctx context.Context, name, def, digest string) error {
	return s.execOne(ctx, "pin the definition of tool "+name+" (sha256 "+digest+")",
		"unpinned tool "+name, `UPDATE tools SET definition = $1, digest = $2 WHERE lower(name) = lower($3) AND digest = ''`, def, digest, name)
}

// RecordToolDrift records that the server declared a pinned tool
// otherwise, once per definition.
func (s *Store) RecordToolDrift(ctx context.Context, name, def, digest string, at time.Time) error {
	return s.execOne(ctx, "tool "+name+": its server declares a definition otherwise than pinned (sha256 "+digest+")",
		"pinned tool "+name+" with another definition",
		`UPDATE tools SET changed_definition = $1, changed_digest = $2, changed_at = $3 WHERE lower(name) = lower($4) AND digest <> '' AND digest <> $5 AND changed_digest <> $6`,
		def, digest, nanos(at), name, digest, digest)
}

// AcceptToolDefinition pins the changed definition whose digest is digest.
func (s *Store) AcceptToolDefinition(ctx context.Context, name, digest string) error {
	return s.execOne(ctx, "accept the changed definition of tool "+name+" (sha256 "+digest+")",
		"tool "+name+" with a changed definition of sha256 "+digest,
		`UPDATE tools SET definition = changed_definition, digest = changed_digest, changed_definition = '', changed_digest = '', changed_at = 0
		WHERE lower(name) = lower($1) AND changed_digest = $2 AND changed_digest <> ''`, name, digest)
}
