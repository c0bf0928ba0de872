package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// A tool's definition is what its server declares of it in tools/list:
// name, title, description, input and output schema, annotations, as RFC
// 8785 canonical JSON. agentauth pins it when the tool is registered or
// imported (or first listed through the gateway, for a tool registered
// by hand), and compares every tools/list the gateway relays with it: a
// tool whose definition changed is hidden and its calls refused until an
// ADMIN accepts the new one, so that the tool a person reviewed (and
// approved a call of) is the one that runs.

// ReasonToolDefinitionChanged: the server declares the tool otherwise than
// when it was pinned; its calls are refused until an ADMIN accepts the
// new definition (or, for a held call, it changed after the call was
// asked for).
const ReasonToolDefinitionChanged = "tool_definition_changed"

// MaxToolDefinitionBytes bounds a definition agentauth keeps.
const MaxToolDefinitionBytes = 64 << 10

// ToolPin is a tool's pinned definition and the drift from it.
type ToolPin struct {
	// Definition is the canonical JSON pinned and Digest its hex SHA-256;
	// both empty for a tool not pinned yet.
	Definition string
	Digest     string
	// Changed is the definition the server declared last that differs
	// from the pinned one, ChangedDigest its digest and ChangedAt when it
	// was first seen; empty while there is none.
	Changed       string
	ChangedDigest string
	ChangedAt     time.Time
}

// Drifted reports whether the server declared the tool otherwise than
// pinned since.
func (p ToolPin) Drifted() bool { return p.ChangedDigest != "" }

// DefinitionDigest is the hex SHA-256 of a canonical definition.
func DefinitionDigest(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// ShortDigest is a digest as a message writes it.
func ShortDigest(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// driftStep refuses a call of a tool whose definition drifted.
func driftStep(t *Tool) *ToolDecision {
	if t == nil || !t.Pin.Drifted() {
		return nil
	}
	return &ToolDecision{Effect: EffectDeny, Reason: ReasonToolDefinitionChanged,
		Message: "server " + t.Server + " declares tool " + t.Name + " otherwise than when it was pinned (sha256 " + ShortDigest(t.Pin.Digest) + " → " +
			ShortDigest(t.Pin.ChangedDigest) + ", seen " + t.Pin.ChangedAt.UTC().Format(time.RFC3339) + "): its calls are refused until an ADMIN reviews and accepts the new definition"}
}
