package sqlite

import (
	"context"
	"time"

	"github.com/agentauth/agentauth/ports"
)

// PinTool pins the definition of a tool not pinned yet.
func (s *Store) PinTool(ctx context.Context, name, def, digest string) error {
	return s.announced(ports.RegistryChangeKey(ports.RegistryTool+name), s.execOne(ctx, "pin the definition of tool "+name+" (sha256 "+digest+")",
		"unpinned tool "+name, `UPDATE tools SET definition = ?, digest = ? WHERE lower(name) = lower(?) AND digest = ''`, def, digest, name))
}

// RecordToolDrift records that the server declared a pinned tool
// otherwise, once per definition.
func (s *Store) RecordToolDrift(ctx context.Context, name, def, digest string, at time.Time) error {
	return s.announced(ports.RegistryChangeKey(ports.RegistryTool+name), s.execOne(ctx, "tool "+name+": its server declares a definition otherwise than pinned (sha256 "+digest+")",
		"pinned tool "+name+" with another definition",
		`UPDATE tools SET changed_definition = ?, changed_digest = ?, changed_at = ? WHERE lower(name) = lower(?) AND digest <> '' AND digest <> ? AND changed_digest <> ?`,
		def, digest, nanos(at), name, digest, digest))
}

// AcceptToolDefinition pins the changed definition whose digest is digest.
func (s *Store) AcceptToolDefinition(ctx context.Context, name, digest string) error {
	return s.announced(ports.RegistryChangeKey(ports.RegistryTool+name), s.execOne(ctx, "accept the changed definition of tool "+name+" (sha256 "+digest+")",
		"tool "+name+" with a changed definition of sha256 "+digest,
		`UPDATE tools SET definition = changed_definition, digest = changed_digest, changed_definition = '', changed_digest = '', changed_at = 0
		WHERE lower(name) = lower(?) AND changed_digest = ? AND changed_digest <> ''`, name, digest))
}
