package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// CheckDefinitions compares what server lists (each tool's name, and the
// tool as the server sent it: mcpwire.ToolList.Tools) with the pins of its
// registered tools, by their definitions (canonical JSON:
// mcpwire.ToolDefinition; kept in memory for the same bytes listed
// again). A registered tool not pinned yet is pinned with what it lists
// now (a tool registered by hand: trust on first sight); one listed otherwise than pinned gets its drift recorded (once
// per definition) and is hidden until an ADMIN accepts it
// (AcceptDefinition); one nobody registered on server is hidden. It
// returns which listed tools may be shown, and what it found for the
// audit record ("" when every tool was as pinned).
func (s *Gateway) CheckDefinitions(ctx context.Context, server string, names []string, listed []json.RawMessage) ([]bool, string, error) {
	defs := s.defs.definitions(listed)
	tools, err := s.catalog.ListTools(ctx, ports.Page{})
	if err != nil {
		return nil, "", err
	}
	registered := make(map[string]domain.Tool, len(tools))
	for _, t := range tools {
		if t.Server == server {
			registered[strings.ToLower(t.Name)] = t
		}
	}
	var notes []string
	ok := make([]bool, len(names))
	for i, listedName := range names {
		name, err := domain.CanonicalToolName(listedName)
		t, found := registered[name]
		def, digest := defs[i].canonical, defs[i].digest
		switch {
		case err != nil || !found:
			notes = append(notes, "not registered "+bounded(listedName, maxNoteTool)+" hidden")
			continue
		case def == "":
			notes = append(notes, name+" declared without a definition agentauth keeps, hidden")
			continue
		}
		switch {
		case t.Pin.Digest == "":
			if err := s.catalog.PinTool(ctx, t.Name, def, digest); err != nil && !errors.Is(err, domain.ErrNotFound) {
				return nil, "", err
			}
			notes = append(notes, name+" pinned at first sight sha256 "+domain.ShortDigest(digest))
			ok[i] = true
		case digest == t.Pin.Digest:
			ok[i] = !t.Pin.Drifted()
			if !ok[i] {
				notes = append(notes, name+" changed before (sha256 "+domain.ShortDigest(t.Pin.ChangedDigest)+"), hidden until accepted")
			}
		default:
			if digest != t.Pin.ChangedDigest {
				if err := s.catalog.RecordToolDrift(ctx, t.Name, def, digest, s.clock.Now().UTC()); err != nil && !errors.Is(err, domain.ErrNotFound) {
					return nil, "", err
				}
			}
			notes = append(notes, name+" changed sha256 "+domain.ShortDigest(t.Pin.Digest)+" → "+domain.ShortDigest(digest)+", hidden until an ADMIN accepts it")
		}
	}
	return ok, strings.Join(notes, ", "), nil
}

// ToolDefinition is a tool's pinned definition and the changed one an
// ADMIN reviews.
func (s *Gateway) ToolDefinition(ctx context.Context, name string) (domain.Tool, error) {
	name, err := domain.CanonicalToolName(name)
	if err != nil {
		return domain.Tool{}, err
	}
	return s.catalog.GetTool(ctx, name)
}

// Accepted is a changed definition accepted: the tool as pinned now, and
// the digest pinned before.
type Accepted struct {
	Tool     domain.Tool
	Previous string
}

// String says what the acceptance did, for its audit record.
func (a Accepted) String() string {
	return "tool " + a.Tool.Name + " of server " + a.Tool.Server + ": changed definition accepted, sha256 " + a.Previous + " → " + a.Tool.Pin.Digest
}

// AcceptDefinition pins the changed definition of tool name whose digest
// is digest (the one the ADMIN reviewed): the tool is shown and callable
// again. Another digest (the server changed it once more since) is a
// conflict; the digest pinned already, with nothing changed, is a retry.
func (s *Gateway) AcceptDefinition(ctx context.Context, name, digest string) (Accepted, error) {
	t, err := s.ToolDefinition(ctx, name)
	if err != nil {
		return Accepted{}, err
	}
	if !t.Pin.Drifted() && digest == t.Pin.Digest {
		return Accepted{Tool: t, Previous: t.Pin.Digest}, nil // accepted already (a retry)
	}
	if !t.Pin.Drifted() {
		return Accepted{}, fmt.Errorf("tool %s has no changed definition to accept: %w", t.Name, domain.ErrConflict)
	}
	if digest != t.Pin.ChangedDigest {
		return Accepted{}, fmt.Errorf("tool %s's changed definition is sha256 %s, not %s (it changed again: review it anew): %w",
			t.Name, t.Pin.ChangedDigest, digest, domain.ErrConflict)
	}
	if err := s.catalog.AcceptToolDefinition(ctx, t.Name, digest); err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			return Accepted{}, fmt.Errorf("tool %s's changed definition moved meanwhile: review it anew: %w", t.Name, domain.ErrConflict)
		}
		return Accepted{}, err
	}
	now, err := s.catalog.GetTool(ctx, t.Name)
	return Accepted{Tool: now, Previous: t.Pin.Digest}, err
}

// definitionHeld refuses the use of an approval of call when the tool's
// definition changed since the call was asked for (or drifted).
func (s *Gateway) definitionHeld(ctx context.Context, call domain.ToolCall) error {
	t, err := s.catalog.GetTool(ctx, call.Tool)
	if err != nil {
		return err
	}
	if t.Pin.Drifted() || t.Pin.Digest != call.ToolDigest {
		return &domain.Refusal{Code: domain.ReasonToolDefinitionChanged, Missing: domain.PermToolCallsWrite,
			Message: "tool " + t.Name + "'s definition changed since call " + call.ID + " was asked for (sha256 " + domain.ShortDigest(call.ToolDigest) +
				" → " + domain.ShortDigest(t.Pin.Digest) + "): its approval holds for the definition it was given under"}
	}
	return nil
}
