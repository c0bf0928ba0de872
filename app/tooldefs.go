package app

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
)

// listedDefinition is what a listed tool declares: its definition
// (canonical JSON, mcpwire.ToolDefinition) and that definition's digest;
// both "" for a tool whose definition agentauth does not keep (no object,
// or over domain.MaxToolDefinitionBytes).
type listedDefinition struct {
	canonical, digest string
}

// Bounds of the definitions cache: the entries, and the bytes of the
// definitions they hold (a definition is at most
// domain.MaxToolDefinitionBytes).
const (
	definitionCacheEntries = 4096
	definitionCacheBytes   = 16 << 20
)

// definitionCache keeps the definitions of listed tools, keyed by the
// SHA-256 of the tool's JSON exactly as its server sent it: the same bytes
// always make the same definition, so a hit gives what canonicalizing
// them again would (RFC 8785 and a SHA-256: 223 allocations, 50–95 µs per
// tool), and any other bytes (a changed description, another server's
// tool) are another key. Least recently used entries go first once it
// holds definitionCacheEntries, or definitionCacheBytes of definitions:
// an upstream listing ever new tools cannot make it grow.
type definitionCache struct {
	mu       sync.Mutex
	lru      *simplelru.LRU[[sha256.Size]byte, listedDefinition]
	bytes    int
	maxBytes int
}

func newDefinitionCache(entries, maxBytes int) *definitionCache {
	c := &definitionCache{maxBytes: maxBytes}
	// NewLRU fails only for a size that is not positive.
	c.lru, _ = simplelru.NewLRU(entries, func(_ [sha256.Size]byte, d listedDefinition) { c.bytes -= len(d.canonical) })
	return c
}

// definitions are the definitions of tools (the members of a tools/list
// result's tools, as sent), from memory where the same bytes were listed
// before.
func (c *definitionCache) definitions(tools []json.RawMessage) []listedDefinition {
	out := make([]listedDefinition, len(tools))
	keys := make([][sha256.Size]byte, len(tools))
	hit := make([]bool, len(tools))
	missed := false
	c.mu.Lock()
	for i, t := range tools {
		keys[i] = sha256.Sum256(t)
		out[i], hit[i] = c.lru.Get(keys[i])
		missed = missed || !hit[i]
	}
	c.mu.Unlock()
	if !missed {
		return out
	}
	for i, t := range tools {
		if !hit[i] {
			out[i] = definitionOf(t)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, d := range out {
		if hit[i] || c.lru.Contains(keys[i]) {
			continue
		}
		c.lru.Add(keys[i], d)
		c.bytes += len(d.canonical)
		for c.bytes > c.maxBytes {
			c.lru.RemoveOldest()
		}
	}
	return out
}

// definitionOf canonicalizes tool's definition and digests it.
func definitionOf(tool json.RawMessage) listedDefinition {
	def := mcpwire.ToolDefinition(tool)
	if def == "" || len(def) > domain.MaxToolDefinitionBytes {
		return listedDefinition{}
	}
	return listedDefinition{canonical: def, digest: domain.DefinitionDigest([]byte(def))}
}
